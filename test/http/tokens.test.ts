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
