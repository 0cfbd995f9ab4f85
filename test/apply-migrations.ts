import { applyD1Migrations, env, reset } from "cloudflare:test";

// Test files share one runtime (`isolate: false`), each starting on empty storage as if it had its own: every
// Durable Object's and D1's data goes, then D1 is migrated again.
await reset();
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
