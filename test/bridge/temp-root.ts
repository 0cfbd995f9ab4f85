/**
 * Vitest global setup: one temporary directory for the whole run, under which every test's directories go
 * (config homes, working directories, wrangler's store), removed when the run ends — without touching another
 * run's directories on the same machine.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

export const TEMP_ROOT_ENV = "LEMBAS_EDGE_TEST_TMP";

export default async function setup(): Promise<() => Promise<void>> {
  const root = await mkdtemp(path.join(tmpdir(), "lembas-edge-run-"));
  // Test workers start after the global setup and inherit this environment.
  process.env[TEMP_ROOT_ENV] = root;
  return () => rm(root, { recursive: true, force: true });
}
