import { applyD1Migrations, env, reset } from "cloudflare:test";

// Test files share one runtime (`isolate: false`), each starting on empty storage as if it had its own: every
// Durable Object's and D1's data goes, then D1 is migrated again. reset() left D1's rows behind when the file before
// had not used it for a while (test/http/rate-limits.test.ts ends on a test of its configuration alone, and
// test/http/accounts.test.ts after it found its 29 accounts); a statement first makes sure D1 is in use.
await env.DB.prepare("SELECT 1").first();
await reset();
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
