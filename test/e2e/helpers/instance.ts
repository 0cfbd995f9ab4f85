/**
 * The real Worker under `wrangler dev` for the end-to-end and browser suites: the repository's own config (its
 * web UI built, its static assets served), free ports, a fresh local D1 migrated first and Durable Object store,
 * ready when discovery answers, stopped with its whole process group. The launcher is the benchmark's, which
 * starts other configs the same way.
 */
import { startDev } from "../../../bench/wrangler-dev.js";

export interface Instance {
  origin: string;
  /** wrangler's output so far, for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

export async function startInstance(): Promise<Instance> {
  const dev = await startDev({ label: "e2e", migrateD1: true, probe: "/.well-known/lembas.json" });
  return { origin: dev.origin, logs: dev.logs, stop: dev.stop };
}
