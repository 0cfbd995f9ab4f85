/**
 * A document split into chunks for embedding: about CHUNK_CHARS characters each, cut at the last paragraph, line or
 * sentence break before that where there is one, and each overlapping the one before by about OVERLAP_CHARS, so a
 * passage that straddles a cut is still found whole in one of them.
 */

export const CHUNK_CHARS = 1500;
const OVERLAP_CHARS = 200;
const BREAKS = ["\n\n", "\n", ". ", " "];

export function splitText(text: string): string[] {
  const chunks: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + CHUNK_CHARS, text.length);
    if (end < text.length) {
      const window = text.slice(start, end);
      for (const mark of BREAKS) {
        const at = window.lastIndexOf(mark);
        if (at > CHUNK_CHARS / 2) {
          end = start + at + mark.length;
          break;
        }
      }
    }
    const chunk = text.slice(start, end).trim();
    if (chunk) chunks.push(chunk);
    if (end >= text.length) break;
    start = Math.max(end - OVERLAP_CHARS, start + 1);
  }
  return chunks;
}
