/**
 * The scripted providers' embeddings: a deterministic bag of words. Each word that carries meaning (lower-cased
 * letters and digits, not one of a few function words) adds 1 to one of DIMENSIONS components, chosen by a hash of
 * the word, so texts that share words point the same way and a search by meaning can be tested for real: the
 * document that shares the query's words ranks first.
 */
export const DIMENSIONS = 256;

/** Every word, as a provider might count tokens. */
export const wordsOf = (text: string): string[] => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

const FUNCTION_WORDS = new Set(
  (
    "a an and are as at be by do for from in is it of on or s " + "that the this to was were what when with yet may"
  ).split(" "),
);

export function bagOfWords(text: string): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0);
  for (const word of wordsOf(text)) {
    if (FUNCTION_WORDS.has(word)) continue;
    let h = 2166136261;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
    vector[(h >>> 0) % DIMENSIONS]! += 1;
  }
  return vector;
}
