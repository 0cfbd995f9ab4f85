/**
 * Vectors as the D1 index keeps them: normalised, each component quantised to a signed byte (scaled by the largest
 * one), base64'd. A quarter of float32's size, and cosine ranking survives the rounding.
 */

export function normalise(v: readonly number[]): Float32Array {
  const norm = Math.hypot(...v) || 1;
  return Float32Array.from(v, (x) => x / norm);
}

export function encodeVector(unit: Float32Array): string {
  const largest = unit.reduce((m, x) => Math.max(m, Math.abs(x)), 0) || 1;
  const bytes = Uint8Array.from(unit, (x) => Math.round((x / largest) * 127) & 0xff);
  return btoa(String.fromCharCode(...bytes));
}

export function decodeVector(text: string): Int8Array {
  const binary = atob(text);
  return Int8Array.from(binary, (c) => (c.charCodeAt(0) << 24) >> 24);
}

/** Cosine of a unit vector and a quantised one (of the same length). */
export function cosine(unit: Float32Array, q: Int8Array): number {
  let dot = 0;
  let norm = 0;
  for (let i = 0; i < q.length; i++) {
    dot += unit[i]! * q[i]!;
    norm += q[i]! * q[i]!;
  }
  return norm === 0 ? 0 : dot / Math.sqrt(norm);
}
