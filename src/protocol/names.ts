/**
 * Whether a name shows anything. A name of only spaces, zero-width or formatting characters (U+200B, U+2060,
 * U+FEFF, a Hangul filler, the blank Braille pattern, combining marks alone) looks empty wherever it is listed,
 * so a person cannot tell it from another or see that it is there.
 */
const VISIBLE = /(?![\p{Default_Ignorable_Code_Point}\u2800])[\p{L}\p{N}\p{P}\p{S}]/u;

export const hasVisibleCharacter = (text: string): boolean => VISIBLE.test(text);

export const NEEDS_VISIBLE = "needs a visible character (not only spaces, zero-width or formatting characters)";
