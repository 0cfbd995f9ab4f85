/**
 * Nobody fills the database: every stored text has a bound (refused from a person, cut or not stored from a device),
 * a pending delete is kept only for a chat that exists, each account has quotas (devices, API tokens, chats, pending
 * deletes), and expired device codes and sign-ins are swept by the cron trigger.
 */
import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";
import { describe, expect, it } from "vitest";
import { chatFromAnnounce } from "../../src/db/chats";
import { DEFAULT_QUOTAS } from "../../src/limits/config";
import type { SessionAnnounce } from "../../src/protocol/lembas";
import { CHAT_QUOTA, chatsOf, pendingRows, until } from "../helpers/chats";
import { createDevice, createUser, type TestUser } from "../helpers/fixtures";
import {
  attachClient,
  hello,
  initializeResult,
  linkedDevice,
  openLink,
  ORIGIN,
  Peer,
  upgrade,
  waitUntilUp,
} from "../helpers/link";
import { issueToken } from "../../src/crypto/tokens";
import { call, jsonOf } from "../helpers/requests";
import { fireRequestDeadlines, statusOf } from "../helpers/linked";

const announce = (sessionId: string, fields: Partial<SessionAnnounce> = {}) => ({
  jsonrpc: "2.0",
  method: "_lembas/session/announce",
  params: {
    sessionId,
    cwd: "/home/me/app",
    title: "A chat",
    model: "fake/chat",
    mode: "edit",
    busy: false,
    origin: "terminal",
    ...fields,
  },
});

const count = async (sql: string, ...binds: unknown[]) =>
  (await env.DB.prepare(sql)
    .bind(...binds)
    .first<{ n: number }>())!.n;

/** `n` chats of a person's device, written straight into D1 in one statement. */
const fillChats = (userId: string, deviceId: string, n: number) =>
  env.DB.prepare(
    `WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < ?3)
     INSERT INTO chats (device_id, session_id, user_id, cwd, origin, created_at, updated_at)
     SELECT ?1, 'ses_fill_' || k, ?2, '/w', 'terminal', 0, 0 FROM i`,
  )
    .bind(deviceId, userId, n)
    .run();

describe("stored texts are bounded", () => {
  it("personalization: each text at most 16 KiB (422 past it), the body at most 128 KiB (413)", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await env.DB.prepare("INSERT INTO account_settings (user_id, personalization_available) VALUES (?, 1)")
      .bind(user.userId)
      .run();
    const put = (body: unknown) =>
      call("PUT", "/v1/me/personalization", { body, headers: { authorization: device.auth } });
    const over = await put({ instructions: "é".repeat(8 * 1024 + 1) }); // 16 KiB + 2 bytes of UTF-8
    expect(over.status).toBe(422);
    expect((await jsonOf(over)).detail).toMatch(/instructions is longer than 16 KiB/);
    expect((await put({ instructions: "x".repeat(16 * 1024) })).status).toBe(200);
    expect((await put({ personality_custom: "x".repeat(5 * 1024 * 1024) })).status).toBe(413);
  });

  it("a device's hello and initialize are kept within bounds; its host and platform are cut to fit", async () => {
    const user = await createUser();
    const huge = await createDevice(user.userId);
    const link = await openLink(huge);
    const big = hello();
    link.send({ ...big, params: { ...big.params, notes: "x".repeat(20 * 1024) } });
    // Still a hello: the link comes up with its known fields kept.
    const first = await link.next();
    link.send({ jsonrpc: "2.0", id: first.id, result: initializeResult() });
    const watcher = await attachClient(user, huge.deviceId);
    await waitUntilUp(watcher);
    const kept = (await statusOf(watcher)).hello as Record<string, unknown>;
    expect(kept).toMatchObject({ protocol: 2, device: big.params.device });
    expect(kept.notes).toBeUndefined();
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(16 * 1024);

    const long = await createDevice(user.userId);
    const peer = await openLink(long);
    const named = hello();
    peer.send({
      ...named,
      params: { ...named.params, device: { host: "h".repeat(1000), platform: "p\u202e".repeat(50) } },
    });
    const init = await peer.next();
    peer.send({ jsonrpc: "2.0", id: init.id, result: initializeResult() });
    const row = await until(
      () =>
        env.DB.prepare("SELECT host, platform FROM devices WHERE id = ?")
          .bind(long.deviceId)
          .first<{ host: string | null; platform: string | null }>(),
      (r) => r?.host !== null,
    );
    expect(row!.host).toHaveLength(255);
    expect(row!.platform).toHaveLength(64);
    expect(row!.platform).not.toContain("\u202e");

    const bloated = await createDevice(user.userId);
    const third = await openLink(bloated);
    third.send(hello());
    const asked = await third.next();
    third.send({ jsonrpc: "2.0", id: asked.id, result: { ...initializeResult(), padding: "x".repeat(70 * 1024) } });
    expect((await third.closed).reason).toMatch(/initialize result is over 64 KiB/);
  });

  it("an announce: a title cut to 200 characters, a session id over 256 makes no chat (and is not passed on)", async () => {
    const { user, device, link, client } = await linkedDevice();
    link.send(announce("ses_long_title", { title: "t".repeat(5000) }));
    link.send(announce(`ses_${"x".repeat(300)}`));
    link.send(announce("ses_last"));
    const chats = await until(
      () => chatsOf(user, device.deviceId),
      (list) => list.some((c) => c.session_id === "ses_last"),
    );
    expect(chats.map((c) => c.session_id).sort()).toEqual(["ses_last", "ses_long_title"]);
    expect(chats.find((c) => c.session_id === "ses_long_title")!.title).toHaveLength(200);
    const passedOn = [await client.next(), await client.next()];
    expect(passedOn.map((m) => (m.params as { sessionId: string }).sessionId)).toEqual(["ses_long_title", "ses_last"]);
  });
});

describe("pending deletes", () => {
  it("only for a chat that exists: a delete of any other session is sent if it can be, and never kept", async () => {
    const { device, link, client } = await linkedDevice();
    for (let i = 0; i < 5; i++)
      client.send({
        jsonrpc: "2.0",
        id: `d${i}`,
        method: "_lembas/session/delete",
        params: { sessionId: `ses_made_up_${i}` },
      });
    for (let i = 0; i < 5; i++)
      expect(await link.next()).toMatchObject({
        method: "_lembas/session/delete",
        params: { sessionId: `ses_made_up_${i}` },
      });
    await fireRequestDeadlines(device.deviceId); // the device never answers
    for (let i = 0; i < 5; i++) {
      expect((await client.answer(`d${i}`)).result).toEqual({
        deleted: false,
        pending: false,
        reason: "no answer; no chat has this session, so the delete is not kept",
      });
    }
    const tooLong = await client.call("long", "_lembas/session/delete", { sessionId: "x".repeat(300) });
    expect(tooLong.error).toMatchObject({ code: -32602 });
    // With the device gone, such a delete is answered at once, and still nothing is kept.
    link.close();
    await until(
      () => statusOf(client),
      (status) => status.link === "down",
    );
    const offline = await client.call("off", "_lembas/session/delete", { sessionId: "ses_made_up_9" });
    expect(offline.result).toMatchObject({ deleted: false, pending: false, reason: expect.stringMatching(/^offline/) });
    expect(await pendingRows(device.deviceId)).toEqual([]);
  });

  it(`at most ${DEFAULT_QUOTAS.pending_deletes} waiting per account`, async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await fillChats(user.userId, device.deviceId, DEFAULT_QUOTAS.pending_deletes + 1);
    await env.DB.prepare(
      `INSERT INTO pending_deletes (device_id, session_id, user_id, created_at, updated_at)
       SELECT device_id, session_id, user_id, 0, 0 FROM chats WHERE device_id = ? AND session_id != 'ses_fill_1'`,
    )
      .bind(device.deviceId)
      .run();
    const refused = await call("DELETE", `/api/chats/${device.deviceId}/ses_fill_1`, {
      headers: { authorization: user.apiAuth },
    });
    expect(refused.status).toBe(409);
    expect(await jsonOf(refused)).toMatchObject({
      detail: expect.stringMatching(/1000 deletes waiting/),
      quota: "pending_deletes",
      limit: 1000,
    });
    expect(await count("SELECT COUNT(*) AS n FROM pending_deletes WHERE user_id = ?", user.userId)).toBe(1000);
    // One already waiting may be asked for again.
    const again = await call("DELETE", `/api/chats/${device.deviceId}/ses_fill_2`, {
      headers: { authorization: user.apiAuth },
    });
    expect(again.status).toBe(202);
  });
});

describe("per-account quotas", () => {
  const authorize = async (n: number) =>
    (
      await jsonOf<{ user_code: string }>(
        await call("POST", "/api/devices/authorize", {
          body: { name: `box ${n}` },
          headers: { "cf-connecting-ip": `192.0.2.${n}` },
        }),
      )
    ).user_code;
  const approve = (user: TestUser, userCode: string) =>
    call("POST", "/api/devices/approve", { body: { user_code: userCode }, headers: { cookie: user.cookie } });

  it(`devices: ${DEFAULT_QUOTAS.devices}, then approving another is refused (409) and the code stays pending`, async () => {
    const user = await createUser();
    for (let i = 0; i < DEFAULT_QUOTAS.devices - 1; i++) await createDevice(user.userId, `d${i}`);
    expect((await approve(user, await authorize(1))).status).toBe(200);
    const code = await authorize(2);
    const refused = await approve(user, code);
    expect(refused.status).toBe(409);
    expect(await jsonOf(refused)).toMatchObject({
      detail: "this account has 100 devices, the most it may have; revoke one it no longer uses",
      quota: "devices",
      limit: 100,
    });
    expect(await count("SELECT COUNT(*) AS n FROM devices WHERE user_id = ?", user.userId)).toBe(100);
    // Once one goes, the same code can be approved.
    const { id } = (
      await jsonOf<{ id: string }[]>(await call("GET", "/api/devices", { headers: { authorization: user.apiAuth } }))
    )[0]!;
    expect((await call("DELETE", `/api/devices/${id}`, { headers: { authorization: user.apiAuth } })).status).toBe(204);
    expect((await approve(user, code)).status).toBe(200);
  });

  it(`API tokens: ${DEFAULT_QUOTAS.api_tokens}, then making another is refused (409)`, async () => {
    const user = await createUser(); // holds one already
    await env.DB.prepare(
      `WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < 98)
       INSERT INTO api_tokens (id, user_id, name, secret_hash, created_at) SELECT 'fill' || k, ?, 'fill', '', 0 FROM i`,
    )
      .bind(user.userId)
      .run();
    const make = () => call("POST", "/api/tokens", { body: { name: "one more" }, headers: { cookie: user.cookie } });
    expect((await make()).status).toBe(201);
    const refused = await make();
    expect(refused.status).toBe(409);
    expect(await jsonOf(refused)).toMatchObject({ quota: "api_tokens", limit: 100 });
    expect(await count("SELECT COUNT(*) AS n FROM api_tokens WHERE user_id = ?", user.userId)).toBe(100);
  });

  it(`chats: ${DEFAULT_QUOTAS.chats}; past them a new session makes no chat, while existing ones still update`, async () => {
    const { user, device, link } = await linkedDevice();
    await fillChats(user.userId, device.deviceId, CHAT_QUOTA - 1);
    link.send(announce("ses_last_one"));
    link.send(announce("ses_one_too_many"));
    link.send(announce("ses_fill_7", { title: "still renamed" }));
    await until(
      () =>
        env.DB.prepare("SELECT title FROM chats WHERE device_id = ? AND session_id = 'ses_fill_7'")
          .bind(device.deviceId)
          .first<string>("title"),
      (title) => title === "still renamed",
    );
    expect(await count("SELECT COUNT(*) AS n FROM chats WHERE user_id = ?", user.userId)).toBe(CHAT_QUOTA);
    expect(await count("SELECT COUNT(*) AS n FROM chats WHERE session_id = 'ses_one_too_many'")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM chats WHERE session_id = 'ses_last_one'")).toBe(1);
    // The database function alone, with a small quota: the same rule.
    const other = await createUser();
    const theirs = await createDevice(other.userId);
    const made = [];
    for (const s of ["a", "b", "c"]) {
      made.push(
        await chatFromAnnounce(env.DB, theirs.deviceId, other.userId, announce(s).params as SessionAnnounce, 2),
      );
    }
    expect(made).toEqual([true, true, false]);
  });
});

describe("the sessions quota", () => {
  it(`keeps ${DEFAULT_QUOTAS.sessions} sign-ins: one more ends the oldest, and its sockets close`, async () => {
    const user = await createUser(); // one sign-in already, made now
    const device = await createDevice(user.userId);
    const oldest = await issueToken("lbs");
    const rows = [
      env.DB.prepare(
        "INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, ?, 1, ?)",
      ).bind(oldest.id, user.userId, oldest.hash, Date.now() + 86_400_000),
    ];
    for (let i = 2; i < DEFAULT_QUOTAS.sessions; i++) {
      rows.push(
        env.DB.prepare(
          "INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, '', ?, ?)",
        ).bind(`old${i}`, user.userId, i, Date.now() + 86_400_000),
      );
    }
    await env.DB.batch(rows);
    const socket = await upgrade(`/api/devices/${device.deviceId}/client`, {
      cookie: `lembas_session=${oldest.token}`,
      origin: ORIGIN,
    });
    expect(socket.status).toBe(101);
    const peer = new Peer(socket.webSocket!);
    const signIn = await call("POST", "/api/auth/login", { body: { email: user.email, password: user.password } });
    expect(signIn.status).toBe(200);
    expect(await count("SELECT COUNT(*) AS n FROM sessions WHERE user_id = ?", user.userId)).toBe(
      DEFAULT_QUOTAS.sessions,
    );
    expect(await count("SELECT COUNT(*) AS n FROM sessions WHERE id = ?", oldest.id)).toBe(0);
    expect((await peer.closed).code).toBe(4403);
    expect((await call("GET", "/api/auth/me", { headers: { cookie: user.cookie } })).status).toBe(200);
  });
});

describe("the cron sweep", () => {
  it("removes device codes a day past their expiry and expired sign-ins, and nothing else", async () => {
    const user = await createUser();
    const now = Date.now();
    const code = (id: string, expiresAt: number) =>
      env.DB.prepare(
        `INSERT INTO device_codes (id, secret_hash, user_code_hash, status, interval_s, created_at, expires_at)
         VALUES (?, '', ?, 'pending', 5, 0, ?)`,
      ).bind(id, `hash-${id}`, expiresAt);
    const session = (id: string, expiresAt: number) =>
      env.DB.prepare(
        "INSERT INTO sessions (id, user_id, secret_hash, created_at, expires_at) VALUES (?, ?, '', 0, ?)",
      ).bind(id, user.userId, expiresAt);
    await env.DB.batch([
      code("old", now - 2 * 86_400_000),
      code("recent", now - 3_600_000),
      code("live", now + 600_000),
      session("expired", now - 1),
      session("current", now + 3_600_000),
    ]);
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const ids = await env.DB.prepare(
      "SELECT id FROM device_codes WHERE id IN ('old', 'recent', 'live') ORDER BY id",
    ).all<{
      id: string;
    }>();
    expect(ids.results.map((r) => r.id)).toEqual(["live", "recent"]);
    const sessions = await env.DB.prepare("SELECT id FROM sessions WHERE id IN ('expired', 'current')").all<{
      id: string;
    }>();
    expect(sessions.results.map((r) => r.id)).toEqual(["current"]);
  });

  it("the sweep reads device codes by the expiry index", async () => {
    const plan = await env.DB.prepare("EXPLAIN QUERY PLAN DELETE FROM device_codes WHERE expires_at < ?").bind(0).all();
    expect(JSON.stringify(plan.results)).toMatch(/device_codes_expires/);
  });
});

describe("names", () => {
  const BIDI = ["\u202e", "\u2066", "\u200f", "\u061c"];
  const CONTROL = ["\u0000", "\u0007", "\u001b[31m", "\u007f", "\u0085"];

  let addresses = 0;

  it("an API token, a device's new name and what a device login says of itself refuse control and bidi characters", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    for (const bad of [...BIDI, ...CONTROL]) {
      const name = `evil${bad}exe.txt`;
      const token = await call("POST", "/api/tokens", { body: { name }, headers: { authorization: user.apiAuth } });
      expect(token.status).toBe(400);
      expect((await jsonOf(token)).detail).toBe("name: may not hold control or bidirectional formatting characters");
      const renamed = await call("PATCH", `/api/devices/${device.deviceId}`, {
        body: { name },
        headers: { authorization: user.apiAuth },
      });
      expect(renamed.status).toBe(400);
      for (const field of ["name", "host", "platform"]) {
        const started = await call("POST", "/api/devices/authorize", {
          body: { [field]: name },
          headers: { "cf-connecting-ip": `203.0.113.${++addresses}` },
        });
        expect(started.status).toBe(400);
        expect((await jsonOf(started)).detail).toMatch(new RegExp(`^${field}: may not hold`));
      }
    }
    expect(await count("SELECT COUNT(*) AS n FROM api_tokens WHERE user_id = ?", user.userId)).toBe(1);
    // Letters of any script are names like any other.
    const fine = await call("POST", "/api/tokens", {
      body: { name: "Ünïcødé ключ 鍵 🔑" },
      headers: { authorization: user.apiAuth },
    });
    expect(fine.status).toBe(201);
  });

  // Each looks empty in a list: spaces and characters drawn as nothing, alone or together.
  const INVISIBLE = [
    "\u200b",
    "\u200b\u200b",
    "\u2060",
    "\ufeff",
    "\u3164",
    "\u2800",
    "\u00ad",
    "\u0301",
    "\u200b \u200c",
  ];
  // U+FEFF is white space to trim, so that name is empty ("is required"); the others say why.
  const NEEDS_VISIBLE = "needs a visible character (not only spaces, zero-width or formatting characters)";
  const refusal = (field: string) => new RegExp(`^${field}: (is required|${NEEDS_VISIBLE.replace(/[()]/g, "\\$&")})$`);

  it("a token's, a device's and a device login's name made only of invisible characters is refused", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId, "laptop");
    for (const name of INVISIBLE) {
      const shown = JSON.stringify(name);
      const token = await call("POST", "/api/tokens", { body: { name }, headers: { authorization: user.apiAuth } });
      expect(token.status, shown).toBe(400);
      expect((await jsonOf(token)).detail, shown).toMatch(refusal("name"));
      const renamed = await call("PATCH", `/api/devices/${device.deviceId}`, {
        body: { name },
        headers: { authorization: user.apiAuth },
      });
      expect(renamed.status, shown).toBe(400);
      expect((await jsonOf(renamed)).detail, shown).toMatch(refusal("name"));
      for (const field of ["name", "host", "platform"]) {
        const started = await call("POST", "/api/devices/authorize", {
          body: { [field]: name },
          headers: { "cf-connecting-ip": `203.0.113.${++addresses}` },
        });
        expect(started.status, `${field} ${shown}`).toBe(400);
        expect((await jsonOf(started)).detail).toMatch(refusal(field));
      }
    }
    expect(await count("SELECT COUNT(*) AS n FROM api_tokens WHERE user_id = ?", user.userId)).toBe(1);
    const [kept] = (await (await call("GET", "/api/devices", { headers: { authorization: user.apiAuth } })).json()) as {
      name: string;
    }[];
    expect(kept!.name).toBe("laptop");
    // A visible character among invisible ones is a name.
    const fine = await call("POST", "/api/tokens", {
      body: { name: "\u200bci\u200b" },
      headers: { authorization: user.apiAuth },
    });
    expect(fine.status).toBe(201);
  });

  it("a chat title made only of invisible characters goes to the device, which the spec leaves it to, but no chat shows it", async () => {
    const { user, device, link, client } = await linkedDevice();
    link.send({
      jsonrpc: "2.0",
      method: "_lembas/session/announce",
      params: { sessionId: "ses_1", cwd: "/home/me/work", title: "Seen" },
    });
    for (const [i, title] of INVISIBLE.entries()) {
      client.send({
        jsonrpc: "2.0",
        id: i + 1,
        method: "_lembas/session/title",
        params: { sessionId: "ses_1", title },
      });
      const asked = await link.next();
      expect(asked.params, JSON.stringify(title)).toEqual({ sessionId: "ses_1", title });
      link.send({ jsonrpc: "2.0", id: asked.id, result: { title } });
      expect((await client.answer(i + 1)).result).toEqual({ title });
    }
    // The device kept the last one; the list shows the chat untitled rather than a name nobody can see.
    const [chat] = await until(
      () => chatsOf(user, device.deviceId),
      (chats) => chats[0]?.title !== "Seen",
    );
    expect(chat?.title).toBeNull();
  });
});
