/** Progress on stderr (stdout is the table), and bounded concurrency for the long steps. */

const started = performance.now();
/** A progress line, stamped with the seconds since the run began. */
export const log = (line: string) =>
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}\n`);

/** A counter that prints "<what>: n/total" about ten times over a run. */
export function progress(what: string, total: number): () => void {
  let done = 0;
  const every = Math.max(1, Math.ceil(total / 10));
  return () => {
    done++;
    if (done % every === 0 || done === total) log(`  ${what}: ${done}/${total}`);
  };
}

/** Runs task(0..count-1) with at most `concurrency` at a time; results in index order. */
export async function inBatches<T>(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<T>,
  onDone: () => void = () => {},
): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
      onDone();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
