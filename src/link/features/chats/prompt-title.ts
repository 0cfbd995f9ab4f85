/** A chat's title from a prompt: its first line of text, cut at a word to fit a list's line. */
export const PROMPT_TITLE_CHARS = 60;

export function titleFromPrompt(prompt: unknown): string | null {
  if (!Array.isArray(prompt)) return null;
  for (const block of prompt) {
    const text =
      (block as { type?: unknown; text?: unknown } | null)?.type === "text" ? (block as { text: unknown }).text : null;
    if (typeof text !== "string") continue;
    const line = text
      .split("\n")
      .map((l) => l.trim().replace(/\s+/g, " "))
      .find((l) => l.length > 0);
    if (!line) continue;
    if (line.length <= PROMPT_TITLE_CHARS) return line;
    const room = line.slice(0, PROMPT_TITLE_CHARS);
    const lastSpace = room.lastIndexOf(" ");
    // A word longer than the whole title is cut where it must be.
    return `${(lastSpace > 0 ? room.slice(0, lastSpace) : room).trimEnd()}…`;
  }
  return null;
}
