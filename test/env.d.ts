import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      MIGRATION_DB: D1Database;
      /** The web UI's files, served as the assets layer serves them. */
      ASSETS: Fetcher;
    }
  }
}
