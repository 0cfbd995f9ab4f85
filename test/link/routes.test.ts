import { SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { attachClient, linkDevice, ORIGIN, upgrade, waitUntilUp } from "../helpers/link";

const rpc = (deviceId: string, body: unknown, headers: Record<string, string>) =>
  SELF.fetch(`${ORIGIN}/api/devices/${deviceId}/rpc`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

describe("GET /api/devices/link", () => {
  it("refuses no credential, a bad token, an API token and a revoked device with 401 JSON", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const revoked = await createDevice(user.userId);
    await SELF.fetch(`${ORIGIN}/api/devices/${revoked.deviceId}`, {
      method: "DELETE",
      headers: { authorization: user.apiAuth },
    });
    const refused: Record<string, string>[] = [
      {},
      { authorization: "Bearer lbd_nope_nope" },
      { authorization: user.apiAuth },
      { authorization: revoked.auth },
    ];
    for (const headers of refused) {
      const res = await upgrade("/api/devices/link", headers);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toEqual(expect.any(String));
    }
    expect((await upgrade("/api/devices/link", { authorization: device.auth })).status).toBe(101);
  });

  it("answers a plain GET with 426 JSON", async () => {
    const device = await createDevice((await createUser()).userId);
    const res = await SELF.fetch(`${ORIGIN}/api/devices/link`, { headers: { authorization: device.auth } });
    expect(res.status).toBe(426);
    expect(((await res.json()) as { detail: string }).detail).toContain("WebSocket");
  });

  it("ignores identity headers sent from outside: the link is the token's device", async () => {
    const user = await createUser();
    const mine = await createDevice(user.userId);
    const other = await createDevice((await createUser()).userId);
    const res = await upgrade("/api/devices/link", {
      authorization: mine.auth,
      "x-lembas-device-id": other.deviceId,
      "x-lembas-user-id": "someone",
    });
    expect(res.status).toBe(101);
    res.webSocket!.accept();
    res.webSocket!.send(
      JSON.stringify({
        jsonrpc: "2.0",
        method: "_lembas/hello",
        params: { protocol: 2, device: { host: "h", platform: "linux" }, limits: null },
      }),
    );
    const client = await attachClient(user, mine.deviceId);
    // The hello reached this user's own device's object, not the other one: asked until the object has handled it.
    let asked = 0;
    await vi.waitFor(
      async () =>
        expect((await client.call(++asked, "_instance/status")).result).toMatchObject({
          hello: { device: { host: "h" } },
        }),
      { timeout: 10_000, interval: 50 },
    );
  });
});

describe("GET /api/devices/:deviceId/client", () => {
  it("attaches with an API token or the session cookie", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    expect((await upgrade(`/api/devices/${device.deviceId}/client`, { authorization: user.apiAuth })).status).toBe(101);
    expect(
      (await upgrade(`/api/devices/${device.deviceId}/client`, { cookie: user.cookie, origin: ORIGIN })).status,
    ).toBe(101);
  });

  it("refuses another person's device and an unknown one with 404, before the object", async () => {
    const owner = await createUser();
    const device = await createDevice(owner.userId);
    const stranger = await createUser();
    for (const path of [`/api/devices/${device.deviceId}/client`, "/api/devices/nope/client"]) {
      const res = await upgrade(path, { authorization: stranger.apiAuth, "x-lembas-user-id": owner.userId });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ detail: "no such device" });
    }
  });

  it("refuses a foreign Origin with 403, no credential with 401, a device token with 401, a plain GET with 426", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const path = `/api/devices/${device.deviceId}/client`;
    const foreign = await upgrade(path, { cookie: user.cookie, origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { detail: string }).detail).toContain("evil.example");
    expect((await upgrade(path, {})).status).toBe(401);
    expect((await upgrade(path, { authorization: device.auth })).status).toBe(401);
    const plain = await SELF.fetch(`${ORIGIN}${path}`, { headers: { authorization: user.apiAuth } });
    expect(plain.status).toBe(426);
  });
});

describe("POST /api/devices/:deviceId/rpc", () => {
  it("relays one request to the device and returns its answer", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const { peer: link } = await linkDevice(device);
    await waitUntilUp(await attachClient(user, device.deviceId));
    const pending = rpc(
      device.deviceId,
      { jsonrpc: "2.0", id: 42, method: "session/new", params: { cwd: "/w" } },
      { authorization: user.apiAuth },
    );
    const forwarded = await link.next();
    expect(forwarded).toMatchObject({ method: "session/new", params: { cwd: "/w" } });
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { sessionId: "ses_rpc" } });
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 42, result: { sessionId: "ses_rpc" } });
  });

  it("answers _instance/status itself, 202 for a notification, JSON-RPC errors for bad bodies and offline", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const auth = { authorization: user.apiAuth };
    const status = await rpc(device.deviceId, { jsonrpc: "2.0", id: 1, method: "_instance/status" }, auth);
    expect(await status.json()).toMatchObject({ id: 1, result: { link: "down" } });
    const offline = await rpc(
      device.deviceId,
      { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/w" } },
      auth,
    );
    expect(await offline.json()).toMatchObject({ id: 2, error: { code: -32001, data: { reason: "offline" } } });
    const note = await rpc(
      device.deviceId,
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } },
      auth,
    );
    expect(note.status).toBe(202);
    const bad = await rpc(device.deviceId, "{", auth);
    expect(await bad.json()).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it("applies the same owner and origin rules as the socket", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const body = { jsonrpc: "2.0", id: 1, method: "_instance/status" };
    expect((await rpc(device.deviceId, body, {})).status).toBe(401);
    expect((await rpc(device.deviceId, body, { authorization: (await createUser()).apiAuth })).status).toBe(404);
    expect((await rpc(device.deviceId, body, { cookie: user.cookie, origin: "https://evil.example" })).status).toBe(
      403,
    );
    expect((await rpc(device.deviceId, body, { cookie: user.cookie, origin: ORIGIN })).status).toBe(200);
  });
});
