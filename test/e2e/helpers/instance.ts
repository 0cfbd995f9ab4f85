/**
 * The real Worker under `wrangler dev` for the end-to-end and browser suites: the repository's own config (its
 * web UI built, its static assets served), free ports, a local D1 migrated first and Durable Object store — fresh,
 * or a given state folder, kept, so an instance killed as a crash kills it can be started again on what it stored —
 * ready when discovery answers, stopped with its whole process group. The launcher is the benchmark's, which
 * starts other configs the same way.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startDev } from "../../../bench/wrangler-dev.js";
import { INSTANCE_CONFIG_ENV, MIGRATED_D1_ENV } from "./prepare-instances.js";

export interface Instance {
  origin: string;
  /** wrangler's output so far, for failure messages. */
  logs(): string;
  stop(): Promise<void>;
  /** SIGKILL to wrangler and its workerd processes: nothing is flushed or closed; the state folder stays. */
  kill(): Promise<void>;
}

/** `persistTo`: a state folder to run on (see startDev); `vars`: this instance's alone (e.g. Web Push keys). */
export async function startInstance(
  options: { persistTo?: string; vars?: Record<string, string> } = {},
): Promise<Instance> {
  const dev = await startDev({
    label: "e2e",
    // Prepared once a run (prepare-instances.ts); without it, the repository's config, migrated on each start.
    config: process.env[INSTANCE_CONFIG_ENV],
    migrateD1: true,
    d1From: process.env[MIGRATED_D1_ENV],
    probe: "/.well-known/lembas.json",
    ...options,
  });
  return { origin: dev.origin, logs: dev.logs, stop: dev.stop, kill: dev.kill };
}

/** The local D1's own SQLite file in a state folder (beside miniflare's metadata.sqlite). */
export function d1File(persistTo: string): string {
  const dir = path.join(persistTo, "v3/d1/miniflare-D1DatabaseObject");
  const files = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  if (files.length !== 1) throw new Error(`expected one D1 database in ${dir}, found ${files.join(", ") || "none"}`);
  return path.join(dir, files[0]!);
}

/** Runs SQL on the local D1 in a state folder, as `wrangler d1 execute --local` does, without a wrangler process. */
export function executeD1(persistTo: string, sql: string): void {
  const db = new DatabaseSync(d1File(persistTo));
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}
