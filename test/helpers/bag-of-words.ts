/**
 * The scripted providers' embeddings: a deterministic bag of words. Each word (lower-cased letters and digits) adds 1
 * to one of DIMENSIONS components, chosen by a hash of the word, so texts that share words point the same way and
 * a search by meaning can be tested for real: the document that shares the query's words ranks first.
 */
export const DIMENSIONS = 64;

export const wordsOf = (text: string): string[] => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

export function bagOfWords(text: string): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0);
  for (const word of wordsOf(text)) {
    let h = 2166136261;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
    vector[(h >>> 0) % DIMENSIONS]! += 1;
  }
  return vector;
}
