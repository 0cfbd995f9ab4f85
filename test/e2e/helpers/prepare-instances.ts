/**
 * Vitest global setup: what every `wrangler dev` instance of the run would otherwise redo on each start — the web
 * UI's build (the config's build step) and the D1 migrations (a wrangler process of their own) — done once. The
 * instances then run a copy of the repository's config without the build step (`configWithoutBuild`), each on a
 * copy of one migrated state folder.
 */
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { configWithoutBuild, migrateD1, ROOT } from "../../../bench/wrangler-dev.js";
import { WEB_BUILT_ENV } from "../../../scripts/test.ts";
import { TEMP_ROOT_ENV } from "../../bridge/temp-root.js";

export const INSTANCE_CONFIG_ENV = "LEMBAS_EDGE_TEST_CONFIG";
export const MIGRATED_D1_ENV = "LEMBAS_EDGE_TEST_D1";

export default async function setup(): Promise<void> {
  const dir = await mkdtemp(path.join(process.env[TEMP_ROOT_ENV] ?? tmpdir(), "lembas-edge-instances-"));
  if (!process.env[WEB_BUILT_ENV]) {
    await promisify(execFile)(process.execPath, [path.join(ROOT, "scripts/build-web.ts")], { cwd: ROOT });
  }
  const config = await configWithoutBuild(dir);
  const d1 = path.join(dir, "migrated");
  await migrateD1(d1, config);
  process.env[INSTANCE_CONFIG_ENV] = config;
  process.env[MIGRATED_D1_ENV] = d1;
}
