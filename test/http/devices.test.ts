import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, jsonOf } from "../helpers/requests";
import { until } from "../helpers/chats";
import { createDevice, createUser } from "../helpers/fixtures";
import { linkDevice } from "../helpers/link";
import { authenticateDevice } from "../../src/http/auth";
import type { DeviceInfo as DeviceView } from "../../src/db/devices";

describe("devices", () => {
  it("lists only the person's own devices, with what the last link said", async () => {
    const user = await createUser();
    const other = await createUser();
    const mine = await createDevice(user.userId, "laptop");
    const theirs = await createDevice(other.userId, "their box");
    // Seen just now: the list shows D1's word without asking the device's object (see "presence" below).
    const seen = Date.now();
    await env.DB.prepare(
      "UPDATE devices SET online = 1, last_seen = ?, protocol = 2, host = 'laptop.local', platform = 'linux', capabilities = ?, agent_info = ? WHERE id = ?",
    )
      .bind(
        seen,
        JSON.stringify(["turns", "terminal"]),
        JSON.stringify({ name: "LLeMbas CLI", version: "1.0.0" }),
        mine.deviceId,
      )
      .run();
    const res = await call("GET", "/api/devices", { headers: { cookie: user.cookie } });
    expect(res.status).toBe(200);
    const list = await jsonOf<DeviceView[]>(res);
    expect(list).toEqual([
      {
        id: mine.deviceId,
        name: "laptop",
        online: true,
        last_seen: seen,
        protocol: 2,
        host: "laptop.local",
        platform: "linux",
        capabilities: ["turns", "terminal"],
        agent_info: { name: "LLeMbas CLI", version: "1.0.0" },
        agent_capabilities: null,
        auth_methods: null,
        scopes: [],
        created_at: expect.any(Number),
      },
    ]);
    expect(JSON.stringify(list)).not.toContain(theirs.deviceId);
    expect(JSON.stringify(list)).not.toContain("secret");
  });

  it("a device that never linked is offline with nothing known", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const [view] = await jsonOf<DeviceView[]>(
      await call("GET", "/api/devices", { headers: { authorization: user.apiAuth } }),
    );
    expect(view).toEqual({
      id: device.deviceId,
      name: "laptop",
      online: false,
      last_seen: null,
      protocol: null,
      host: null,
      platform: null,
      capabilities: null,
      agent_info: null,
      agent_capabilities: null,
      auth_methods: null,
      scopes: [],
      created_at: expect.any(Number),
    });
  });

  it("lists what the agent of the last link offered: its agentCapabilities (those the instance relays) and authMethods", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const authMethods = [{ id: "chatgpt", name: "Sign in with ChatGPT", description: null }];
    const agentCapabilities = {
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      sessionCapabilities: { list: {}, resume: {}, close: {} },
    };
    await linkDevice(device, {
      capabilities: [],
      initialize: {
        agentCapabilities: { ...agentCapabilities, providers: {} },
        authMethods,
        agentInfo: { name: "codex-acp", version: "0.9.0" },
        _meta: null,
      },
    });
    const view = await until(
      async () =>
        (await jsonOf<DeviceView[]>(await call("GET", "/api/devices", { headers: { cookie: user.cookie } })))[0],
      (device) => device?.online === true,
    );
    expect(view).toMatchObject({
      online: true,
      agent_info: { name: "codex-acp", version: "0.9.0" },
      agent_capabilities: agentCapabilities,
      auth_methods: authMethods,
    });
  });

  it("renames one's own device; a bad name or another's device is refused", async () => {
    const user = await createUser();
    const other = await createUser();
    const device = await createDevice(user.userId);
    const res = await call("PATCH", `/api/devices/${device.deviceId}`, {
      body: { name: " work laptop " },
      headers: { cookie: user.cookie },
    });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toMatchObject({ id: device.deviceId, name: "work laptop" });
    for (const name of ["", "x".repeat(101)]) {
      const bad = await call("PATCH", `/api/devices/${device.deviceId}`, {
        body: { name },
        headers: { cookie: user.cookie },
      });
      expect(bad.status).toBe(400);
      expect((await jsonOf(bad)).detail).toMatch(/^name: /);
    }
    const foreign = await call("PATCH", `/api/devices/${device.deviceId}`, {
      body: { name: "mine now" },
      headers: { cookie: other.cookie },
    });
    expect(foreign.status).toBe(404);
    expect(await jsonOf(foreign)).toEqual({ detail: "no such device" });
    const row = await env.DB.prepare("SELECT name FROM devices WHERE id = ?")
      .bind(device.deviceId)
      .first<{ name: string }>();
    expect(row!.name).toBe("work laptop");
  });

  it("revoking deletes the device and its token stops working at once", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    // The token works before: a person's route refuses it for being a device's, not for being unknown.
    const before = await call("GET", "/api/devices", { headers: { authorization: device.auth } });
    expect((await jsonOf(before)).detail).toMatch(/a device token cannot be used here/);

    const res = await call("DELETE", `/api/devices/${device.deviceId}`, { headers: { cookie: user.cookie } });
    expect(res.status).toBe(204);
    expect(await env.DB.prepare("SELECT id FROM devices WHERE id = ?").bind(device.deviceId).first()).toBeNull();
    expect(await jsonOf<DeviceView[]>(await call("GET", "/api/devices", { headers: { cookie: user.cookie } }))).toEqual(
      [],
    );
    await expect(
      authenticateDevice(new Request("http://localhost/x", { headers: { authorization: device.auth } }), env),
    ).rejects.toMatchObject({
      status: 401,
      detail: expect.stringMatching(/revoked/),
    });
    expect((await call("DELETE", `/api/devices/${device.deviceId}`, { headers: { cookie: user.cookie } })).status).toBe(
      404,
    );
  });

  it("another person cannot revoke a device, nor learn that it exists", async () => {
    const owner = await createUser();
    const other = await createUser();
    const device = await createDevice(owner.userId);
    const res = await call("DELETE", `/api/devices/${device.deviceId}`, { headers: { authorization: other.apiAuth } });
    expect(res.status).toBe(404);
    const unknown = await call("DELETE", "/api/devices/AAAAAAAAAAAA", { headers: { authorization: other.apiAuth } });
    expect(await jsonOf(res)).toEqual(await jsonOf(unknown));
    expect(await env.DB.prepare("SELECT id FROM devices WHERE id = ?").bind(device.deviceId).first()).not.toBeNull();
  });
});

describe("device scopes", () => {
  it("an approval gives the library only when asked; the devices list shows it; PATCH changes it", async () => {
    const user = await createUser();
    const login = async (body: Record<string, unknown>) => {
      const code = await jsonOf<{ user_code: string }>(await call("POST", "/api/devices/authorize", { body: {} }));
      const res = await call("POST", "/api/devices/approve", {
        body: { user_code: code.user_code, ...body },
        headers: { cookie: user.cookie },
      });
      expect(res.status).toBe(200);
      return jsonOf<{ device_id: string; scopes: string[] }>(res);
    };
    const plain = await login({});
    const reader = await login({ library: true });
    expect(plain.scopes).toEqual([]);
    expect(reader.scopes).toEqual(["library"]);
    const scopesOf = async () =>
      Object.fromEntries(
        (await jsonOf<DeviceView[]>(await call("GET", "/api/devices", { headers: { cookie: user.cookie } }))).map(
          (d) => [d.id, d.scopes],
        ),
      );
    expect(await scopesOf()).toEqual({ [plain.device_id]: [], [reader.device_id]: ["library"] });

    const patched = await call("PATCH", `/api/devices/${plain.device_id}`, {
      body: { scopes: ["library"] },
      headers: { cookie: user.cookie },
    });
    expect(patched.status).toBe(200);
    expect(await jsonOf(patched)).toMatchObject({ name: "device", scopes: ["library"] });
    expect(await scopesOf()).toEqual({ [plain.device_id]: ["library"], [reader.device_id]: ["library"] });
    const bad = await call("PATCH", `/api/devices/${plain.device_id}`, {
      body: { library: true },
      headers: { cookie: user.cookie },
    });
    expect(bad.status).toBe(400);
    const notBool = await call("POST", "/api/devices/approve", {
      body: { user_code: "BCDF-GHJK", library: "yes" },
      headers: { cookie: user.cookie },
    });
    expect(notBool.status).toBe(400);
  });
});

describe("presence in the device list", () => {
  const MINUTES_AGO = (n: number) => Date.now() - n * 60_000;
  const setPresence = (deviceId: string, online: boolean, lastSeen: number) =>
    env.DB.prepare("UPDATE devices SET online = ?, last_seen = ? WHERE id = ?")
      .bind(online ? 1 : 0, lastSeen, deviceId)
      .run();
  const row = (deviceId: string) =>
    env.DB.prepare("SELECT online, last_seen FROM devices WHERE id = ?")
      .bind(deviceId)
      .first<{ online: number; last_seen: number }>();
  const listed = async (cookie: string) =>
    jsonOf<DeviceView[]>(await call("GET", "/api/devices", { headers: { cookie } }));

  it("an online older than a minute whose object has no link (it died with the process) is shown offline, and D1 follows", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    // D1 still says what the last link wrote before the process died; the object has no link.
    await setPresence(device.deviceId, true, MINUTES_AGO(2));
    const [shown] = await listed(user.cookie);
    expect(shown).toMatchObject({ id: device.deviceId, online: false });
    await until(
      () => row(device.deviceId),
      (r) => r?.online === 0,
    );
  });

  it("an online older than a minute whose link is up is confirmed: still online, seen now", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await linkDevice(device);
    await until(
      () => row(device.deviceId),
      (r) => r?.online === 1,
    );
    const old = MINUTES_AGO(5);
    await setPresence(device.deviceId, true, old);
    const before = Date.now();
    const [shown] = await listed(user.cookie);
    expect(shown).toMatchObject({ id: device.deviceId, online: true });
    expect(shown!.last_seen).toBeGreaterThanOrEqual(before);
    const confirmed = await until(
      () => row(device.deviceId),
      (r) => (r?.last_seen ?? 0) >= before,
    );
    expect(confirmed!.online).toBe(1);
  });

  it("an online confirmed within the minute is shown as D1 has it, without waking the object", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    // Had the object been asked, it would have said no link.
    await setPresence(device.deviceId, true, MINUTES_AGO(0.5));
    expect((await listed(user.cookie))[0]).toMatchObject({ online: true });
    expect((await row(device.deviceId))!.online).toBe(1);
  });
});
