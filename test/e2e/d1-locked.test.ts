/**
 * End to end: the local D1 locked for real. `wrangler dev` runs on a state folder of the test's own; a second
 * connection to its D1 SQLite file holds an exclusive transaction, so the Worker's writes meet SQLITE_BUSY as they
 * would behind another writer. Sign-in, a device login and a token answer 503 with Retry-After and a sentence —
 * never 500 — a refused sign-in is not counted as a guess, and all work again once the lock is let go.
 */
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, type Person } from "./helpers/accounts.js";
import { d1File, startInstance, type Instance } from "./helpers/instance.js";

const CREDENTIALS = { email: "owner@example.org", password: "a long enough password" };

let persistTo: string;
let instance: Instance;
let person: Person;

beforeAll(async () => {
  persistTo = await tempDir("d1-locked");
  instance = await startInstance({ persistTo });
  person = await firstPerson(instance.origin);
});

afterAll(async () => {
  await instance?.stop();
});

const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${instance.origin}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

async function expectBusy(response: Response): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(503);
  const seconds = Number(response.headers.get("retry-after"));
  expect(seconds).toBeGreaterThan(0);
  expect(JSON.parse(text)).toEqual({
    detail: `the database is busy for a moment; try again in ${seconds} s`,
    retry_after: seconds,
  });
}

describe("a locked D1", () => {
  it("answers sign-in, a device login and a new token 503 with Retry-After, and serves them once unlocked", async () => {
    const lock = new DatabaseSync(d1File(persistTo));
    lock.exec("BEGIN EXCLUSIVE");
    try {
      // More sign-ins than the account's free failures: none is counted, since no password was wrong.
      for (let i = 0; i < 6; i++) await expectBusy(await post("/api/auth/login", CREDENTIALS));
      await expectBusy(await post("/api/devices/authorize", { host: "box" }));
      await expectBusy(await post("/api/tokens", { name: "while locked" }, { authorization: person.apiAuth }));
    } finally {
      lock.exec("ROLLBACK");
      lock.close();
    }
    expect((await post("/api/auth/login", CREDENTIALS)).status).toBe(200);
    expect((await post("/api/devices/authorize", { host: "box" })).status).toBe(200);
    expect((await post("/api/tokens", { name: "after" }, { authorization: person.apiAuth })).status).toBe(201);
    expect(instance.logs()).not.toMatch(/unhandled error/);
  });
});
