/**
 * The instance always keeps an admin: two admins demoting each other at the same moment cannot leave none, and an
 * admin demoted while a request of theirs was on its way changes nothing with it.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createUser, type TestUser } from "../helpers/fixtures";
import { call, jsonOf } from "../helpers/requests";

const setAdmin = (by: TestUser, target: TestUser, admin: boolean) =>
  call("PUT", `/api/admin/accounts/${target.userId}/admin`, {
    body: { admin },
    headers: { authorization: by.apiAuth },
  });

const admins = async (...users: TestUser[]) =>
  (await env.DB.prepare(
    `SELECT COUNT(*) AS n FROM users WHERE admin = 1 AND id IN (${users.map(() => "?").join(", ")})`,
  )
    .bind(...users.map((u) => u.userId))
    .first<{ n: number }>())!.n;

describe("admins demoting each other", () => {
  it("at once, ten times over: one wins, the other is refused, and one admin is always left", async () => {
    for (let round = 0; round < 10; round++) {
      const a = await createUser({ admin: true });
      const b = await createUser({ admin: true });
      const answers = await Promise.all([setAdmin(a, b, false), setAdmin(b, a, false)]);
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses[0]).toBe(200);
      expect([403, 409]).toContain(statuses[1]);
      const refused = answers.find((r) => r.status !== 200)!;
      expect((await jsonOf(refused)).detail).toMatch(/no longer an admin|last admin/);
      expect(await admins(a, b)).toBe(1);
    }
  });

  it("one after the other: the second, no longer an admin, is refused", async () => {
    const a = await createUser({ admin: true });
    const b = await createUser({ admin: true });
    expect((await setAdmin(a, b, false)).status).toBe(200);
    expect((await setAdmin(b, a, false)).status).toBe(403);
    expect(await admins(a, b)).toBe(1);
  });

  it("an admin can still make others admins and demote them while another admin is left", async () => {
    const a = await createUser({ admin: true });
    const c = await createUser();
    expect(await jsonOf(await setAdmin(a, c, true))).toMatchObject({ admin: true });
    expect(await jsonOf(await setAdmin(a, c, false))).toMatchObject({ admin: false });
  });
});
