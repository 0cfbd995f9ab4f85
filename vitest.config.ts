import { existsSync } from "node:fs";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { fakePushService, PUSH_SERVICE } from "./test/shared/push-service.js";
import { fakeUpstream, TEST_PROVIDERS } from "./test/shared/upstream.js";
import { writeHeadersFile } from "./scripts/write-headers.ts";
import { writePageFile } from "./scripts/write-page.ts";

/** A VAPID key pair for the tests' instance, in the web-push tools' form (the tests verify with the public key). */
async function vapidKeys() {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const { d } = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const raw = Buffer.from(new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)));
  return { PUSH_VAPID_PUBLIC_KEY: raw.toString("base64url"), PUSH_VAPID_PRIVATE_KEY: d ?? "" };
}

const NOT_WORKERD = ["test/e2e/**", "test/bridge/**", "test/browser/**", "test/architecture/**"];
/**
 * Files that need a runtime of their own. test/link/push.test.ts: a card's push to a chat the page no longer shows
 * does not reach the push service within the test's wait when the file runs after others in a shared runtime.
 */
const OWN_RUNTIME = ["test/link/push.test.ts"];

// Tests run inside workerd with the real Durable Object and a real (local) D1, migrated before each file.
export default defineConfig(async () => {
  if (!existsSync(path.join(import.meta.dirname, "web/public/index.html")))
    await writePageFile(import.meta.dirname, [], []);
  // The assets layer's _headers (the web UI's security headers), as a build writes it for its page.
  writeHeadersFile(import.meta.dirname);
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            PROVIDERS: TEST_PROVIDERS,
            PROVIDER_FAKE_API_KEY: "sk-test-fake",
            ...(await vapidKeys()),
            PUSH_CONTACT: "mailto:ops@example.com",
            PUSH_EXTRA_ORIGINS: PUSH_SERVICE,
          },
          // An empty database of its own, for tests of a migration over rows written in the schema before it.
          d1Databases: ["MIGRATION_DB"],
          // The Worker's outbound fetches reach a scripted provider and a push service, over the real fetch boundary.
          outboundService: (request: Request) =>
            new URL(request.url).origin === PUSH_SERVICE ? fakePushService(request) : fakeUpstream(request),
        },
      }),
    ],
    test: {
      setupFiles: ["./test/apply-migrations.ts", "./test/shared/wire-rules-setup.ts"],
      isolate: false,
      // Starting a runtime costs about 1.3 s, so test files share one (`isolate: false`), each starting on empty
      // storage (test/apply-migrations.ts); the files in OWN_RUNTIME get one each.
      projects: [
        {
          extends: true,
          test: { name: "workerd", include: ["test/**/*.test.ts"], exclude: [...NOT_WORKERD, ...OWN_RUNTIME] },
        },
        { extends: true, test: { name: "workerd-own-runtime", include: OWN_RUNTIME, isolate: true } },
      ],
      // Every wait inside a test has its own bound that names what never came (a message, a row, a state); the
      // test's own bound is the last resort. Vitest's 5 s failed CI once: under the full suite's load a test that takes
      // 0.4 s alone took 30.9 s, its own waits never running out.
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  };
});
