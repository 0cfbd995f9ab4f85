/** Summaries of samples: nearest-rank percentiles and the median. */

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const median = (samples: readonly number[]) => percentile(samples, 50);

export interface Spread {
  n: number;
  p50: number;
  p99: number;
}

export const spread = (samples: readonly number[]): Spread => ({
  n: samples.length,
  p50: percentile(samples, 50),
  p99: percentile(samples, 99),
});

/** Repeated measures of one figure: their median and range, and each of them in order. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export const summary = (runs: readonly number[]): Summary => ({
  median: median(runs),
  min: Math.min(...runs),
  max: Math.max(...runs),
  runs: [...runs],
});

/** The least-squares slope of y over x (NaN with fewer than two distinct x). */
export function slope(points: readonly { x: number; y: number }[]): number {
  const mean = (f: (p: { x: number; y: number }) => number) => points.reduce((t, p) => t + f(p), 0) / points.length;
  const [mx, my] = [mean((p) => p.x), mean((p) => p.y)];
  const sxx = points.reduce((t, p) => t + (p.x - mx) ** 2, 0);
  return sxx > 0 ? points.reduce((t, p) => t + (p.x - mx) * (p.y - my), 0) / sxx : Number.NaN;
}
