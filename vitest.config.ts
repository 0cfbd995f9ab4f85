import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { fakeUpstream, TEST_PROVIDERS } from "./test/helpers/upstream.js";

// Tests run inside workerd with the real Durable Object and a real (local) D1, migrated before each file.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations, PROVIDERS: TEST_PROVIDERS, PROVIDER_FAKE_API_KEY: "sk-test-fake" },
          // The Worker's outbound fetches (to providers) reach a scripted provider, over the real fetch boundary.
          outboundService: fakeUpstream,
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      exclude: ["test/e2e/**", "test/bridge/**", "test/browser/**"],
      setupFiles: ["./test/apply-migrations.ts"],
    },
  };
});
