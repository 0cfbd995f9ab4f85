import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, jsonOf } from "../helpers/requests";
import { createUser } from "../helpers/fixtures";

interface CreatedToken {
  id: string;
  name: string;
  token: string;
  scopes: string[];
  created_at: number;
}

describe("API tokens", () => {
  it("a new token is shown once, works, is listed without its secret, and stops working when deleted", async () => {
    const user = await createUser();
    const res = await call("POST", "/api/tokens", {
      body: { name: "  deploy script " },
      headers: { cookie: user.cookie },
    });
    expect(res.status).toBe(201);
    const created = await jsonOf<CreatedToken>(res);
    expect(created).toEqual({
      id: expect.any(String),
      name: "deploy script",
      token: expect.stringMatching(/^lba_/),
      scopes: [],
      created_at: expect.any(Number),
    });
    const [, tokenId, secret] = /^lba_(.{12})_(.{32})$/.exec(created.token)!;
    expect(tokenId).toBe(created.id);

    const auth = { authorization: `Bearer ${created.token}` };
    const me = await call("GET", "/api/auth/me", { headers: auth });
    expect(await jsonOf(me)).toMatchObject({ id: user.userId });

    const list = await jsonOf<Array<Record<string, unknown>>>(await call("GET", "/api/tokens", { headers: auth }));
    expect(list).toContainEqual({ id: created.id, name: "deploy script", scopes: [], created_at: created.created_at });
    expect(list).toHaveLength(2); // and the fixture's own
    expect(JSON.stringify(list)).not.toContain(secret!);
    const stored = await env.DB.prepare("SELECT secret_hash FROM api_tokens WHERE id = ?")
      .bind(created.id)
      .first<{ secret_hash: string }>();
    expect(stored!.secret_hash).toMatch(/^[0-9a-f]{64}$/);

    const del = await call("DELETE", `/api/tokens/${created.id}`, { headers: { cookie: user.cookie } });
    expect(del.status).toBe(204);
    const refused = await call("GET", "/api/auth/me", { headers: auth });
    expect(refused.status).toBe(401);
    expect((await jsonOf(refused)).detail).toMatch(/API token is not valid/);
    expect((await call("DELETE", `/api/tokens/${created.id}`, { headers: { cookie: user.cookie } })).status).toBe(404);
  });

  it("lists and deletes only one's own tokens", async () => {
    const owner = await createUser();
    const other = await createUser();
    const { id } = await jsonOf<CreatedToken>(
      await call("POST", "/api/tokens", { body: { name: "mine" }, headers: { authorization: owner.apiAuth } }),
    );
    const theirs = await jsonOf<Array<{ id: string }>>(
      await call("GET", "/api/tokens", { headers: { authorization: other.apiAuth } }),
    );
    expect(theirs.map((t) => t.id)).not.toContain(id);
    const res = await call("DELETE", `/api/tokens/${id}`, { headers: { authorization: other.apiAuth } });
    expect(res.status).toBe(404);
    expect(await jsonOf(res)).toEqual({ detail: "no such API token" });
    expect(await env.DB.prepare("SELECT id FROM api_tokens WHERE id = ?").bind(id).first()).not.toBeNull();
  });

  it("refuses a token without a name", async () => {
    const user = await createUser();
    for (const body of [{}, { name: "   " }, { name: "x".repeat(101) }]) {
      const res = await call("POST", "/api/tokens", { body, headers: { authorization: user.apiAuth } });
      expect(res.status).toBe(400);
      expect((await jsonOf(res)).detail).toMatch(/^name: /);
    }
  });
});

describe("API token scopes", () => {
  it("are given when the token is made, listed with it, and only known ones are taken", async () => {
    const user = await createUser();
    const made = await call("POST", "/api/tokens", {
      body: { name: "library script", scopes: ["library"] },
      headers: { cookie: user.cookie },
    });
    expect(made.status).toBe(201);
    const created = await jsonOf<CreatedToken>(made);
    expect(created.scopes).toEqual(["library"]);
    const list = await jsonOf<CreatedToken[]>(await call("GET", "/api/tokens", { headers: { cookie: user.cookie } }));
    expect(list.find((t) => t.id === created.id)?.scopes).toEqual(["library"]);
    for (const scopes of [["admin"], ["library", "library"], "library"]) {
      const bad = await call("POST", "/api/tokens", { body: { name: "x", scopes }, headers: { cookie: user.cookie } });
      expect(bad.status, JSON.stringify(scopes)).toBe(400);
      expect((await jsonOf(bad)).detail).toMatch(/scopes/);
    }
  });
});

describe("a credential hands out only scopes it holds", () => {
  const HELD = /this credential does not hold the library scope, so it cannot give it/;

  /** A new API token of the user, made with the sign-in (which holds every scope). */
  async function tokenWith(user: Awaited<ReturnType<typeof createUser>>, scopes: string[]) {
    const made = await call("POST", "/api/tokens", { body: { name: "t", scopes }, headers: { cookie: user.cookie } });
    expect(made.status).toBe(201);
    return `Bearer ${(await jsonOf<CreatedToken>(made)).token}`;
  }

  it("a token without the library scope cannot make one with it (403, naming the scope); one with it can", async () => {
    const user = await createUser();
    const bare = await tokenWith(user, []);
    const refused = await call("POST", "/api/tokens", {
      body: { name: "wider", scopes: ["library"] },
      headers: { authorization: bare },
    });
    expect(refused.status).toBe(403);
    const body = await jsonOf<{ detail: string; scope: string }>(refused);
    expect(body.detail).toMatch(HELD);
    expect(body.scope).toBe("library");
    const names = (await jsonOf<CreatedToken[]>(await call("GET", "/api/tokens", { headers: { cookie: user.cookie } })))
      .map((t) => t.name)
      .sort();
    expect(names).toEqual(["t", "test"]);
    // Without scopes it may still make tokens; a library token may give the library on.
    expect(
      (await call("POST", "/api/tokens", { body: { name: "same" }, headers: { authorization: bare } })).status,
    ).toBe(201);
    const reader = await tokenWith(user, ["library"]);
    const given = await call("POST", "/api/tokens", {
      body: { name: "given", scopes: ["library"] },
      headers: { authorization: reader },
    });
    expect(given.status).toBe(201);
  });

  it("a token without the library scope cannot approve a device with it, nor give it to one", async () => {
    const user = await createUser();
    const bare = await tokenWith(user, []);
    const authorize = await jsonOf<{ user_code: string; device_code: string }>(
      await call("POST", "/api/devices/authorize", { body: { host: "box" } }),
    );
    const approve = (authorization: string, library: boolean) =>
      call("POST", "/api/devices/approve", {
        body: { user_code: authorize.user_code, library },
        headers: { authorization },
      });
    const refused = await approve(bare, true);
    expect(refused.status).toBe(403);
    expect(await jsonOf(refused)).toMatchObject({ detail: expect.stringMatching(HELD), scope: "library" });
    // Nothing was made; the code still waits for someone who may approve it.
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM devices WHERE user_id = ?").bind(user.userId).first("n"),
    ).toBe(0);
    expect((await approve(bare, false)).status).toBe(200);
    const token = await call("POST", "/api/devices/token", { body: { device_code: authorize.device_code } });
    const { device_id, scope } = await jsonOf<{ device_id: string; scope: string }>(token);
    expect(scope).toBe("");

    const patch = (authorization: string) =>
      call("PATCH", `/api/devices/${device_id}`, { body: { scopes: ["library"] }, headers: { authorization } });
    const widened = await patch(bare);
    expect(widened.status).toBe(403);
    expect(await jsonOf(widened)).toMatchObject({ scope: "library" });
    const row = await env.DB.prepare("SELECT scopes FROM devices WHERE id = ?").bind(device_id).first("scopes");
    expect(row).toBe("");
    // Renaming and taking scopes away need nothing held; a library token may give what it has.
    const renamed = await call("PATCH", `/api/devices/${device_id}`, {
      body: { name: "box", scopes: [] },
      headers: { authorization: bare },
    });
    expect(renamed.status).toBe(200);
    expect((await patch(await tokenWith(user, ["library"]))).status).toBe(200);
  });
});
