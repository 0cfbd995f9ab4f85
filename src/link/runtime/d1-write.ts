/** The D1 writes a feature declares, by kind, for the queue (d1-queue.ts) to run until each has landed. */
/** A kind of write: its name (unique across features) and what it does with its arguments. */
export interface D1Write<A> {
  readonly kind: string;
  readonly run: (db: D1Database, args: A) => Promise<unknown>;
}

export type D1WriteRun = (db: D1Database, args: never) => Promise<unknown>;

export const d1Write = <A>(kind: string, run: (db: D1Database, args: A) => Promise<unknown>): D1Write<A> => ({
  kind,
  run,
});

/** A feature's `d1Writes` from its writes. */
export const d1Writes = (...writes: D1Write<never>[]): Record<string, D1WriteRun> =>
  Object.fromEntries(writes.map((w) => [w.kind, w.run]));
