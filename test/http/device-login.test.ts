import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, jsonOf, ORIGIN } from "../helpers/requests";
import { createUser, type TestUser } from "../helpers/fixtures";
import { authenticateDevice } from "../../src/http/auth";
import { sha256Hex } from "../../src/crypto/tokens";

interface Authorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

interface OAuthError {
  error: string;
  error_description: string;
  detail: string;
}

const GRANT = "urn:ietf:params:oauth:grant-type:device_code";

async function startLogin(
  body: Record<string, string> = { name: "laptop", host: "laptop.local", platform: "linux" },
): Promise<Authorization> {
  const res = await call("POST", "/api/devices/authorize", { body });
  expect(res.status).toBe(200);
  return jsonOf<Authorization>(res);
}

const poll = (deviceCode: string) => call("POST", "/api/devices/token", { body: { device_code: deviceCode } });

/** The code's row, by the id inside the device code. */
const codeId = (deviceCode: string) => /^lbc_(.{12})_/.exec(deviceCode)![1]!;

/** Lets the next poll count as on time, as if the device had waited its interval. */
const waitInterval = (deviceCode: string) =>
  env.DB.prepare("UPDATE device_codes SET last_polled_at = last_polled_at - interval_s * 1000 WHERE id = ?")
    .bind(codeId(deviceCode))
    .run();

async function expectOAuthError(res: Response, error: string): Promise<OAuthError> {
  expect(res.status).toBe(400);
  const body = await jsonOf<OAuthError>(res);
  expect(body).toEqual({ error, error_description: expect.any(String), detail: body.error_description });
  return body;
}

const approve = (user: TestUser, userCode: string) =>
  call("POST", "/api/devices/approve", { body: { user_code: userCode }, headers: { cookie: user.cookie } });

describe("device login (RFC 8628)", () => {
  it("authorize → pending → slow_down → approve → token once, and the token is a device's", async () => {
    const user = await createUser();
    const auth = await startLogin();
    expect(auth).toEqual({
      device_code: expect.stringMatching(/^lbc_[A-Za-z0-9_-]{12}_[A-Za-z0-9_-]{32}$/),
      user_code: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
      verification_uri: `${ORIGIN}/device`,
      verification_uri_complete: `${ORIGIN}/device?code=${auth.user_code}`,
      expires_in: 600,
      interval: 5,
    });
    // Neither code is stored in the clear.
    const row = await env.DB.prepare("SELECT * FROM device_codes WHERE id = ?")
      .bind(codeId(auth.device_code))
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(auth.user_code.replace("-", ""));
    expect(row!.user_code_hash).toBe(await sha256Hex(auth.user_code.replace("-", "")));
    expect(JSON.stringify(row)).not.toContain(auth.device_code.slice(17));

    await expectOAuthError(await poll(auth.device_code), "authorization_pending");
    const slow = await expectOAuthError(await poll(auth.device_code), "slow_down");
    expect(slow.detail).toMatch(/10 seconds/);
    const interval = await env.DB.prepare("SELECT interval_s FROM device_codes WHERE id = ?")
      .bind(codeId(auth.device_code))
      .first<{ interval_s: number }>();
    expect(interval!.interval_s).toBe(10);
    await waitInterval(auth.device_code);
    await expectOAuthError(await poll(auth.device_code), "authorization_pending");

    // The person types the code in lower case, without the dash.
    const approved = await approve(user, auth.user_code.replace("-", "").toLowerCase());
    expect(approved.status).toBe(200);
    const { device_id, name } = await jsonOf<{ device_id: string; name: string }>(approved);
    expect(name).toBe("laptop");
    const device = await env.DB.prepare("SELECT user_id, name, host, platform, secret_hash FROM devices WHERE id = ?")
      .bind(device_id)
      .first();
    expect(device).toEqual({
      user_id: user.userId,
      name: "laptop",
      host: "laptop.local",
      platform: "linux",
      secret_hash: "",
    });

    const issued = await poll(auth.device_code);
    expect(issued.status).toBe(200);
    const tokenBody = await jsonOf<{ access_token: string; token_type: string; device_id: string }>(issued);
    expect(tokenBody).toEqual({
      access_token: expect.stringMatching(new RegExp(`^lbd_${device_id}_`)),
      token_type: "Bearer",
      device_id,
      scope: "", // RFC 6749 §5.1: the scopes granted, here none
    });
    const caller = await authenticateDevice(
      new Request("http://localhost/x", { headers: { authorization: `Bearer ${tokenBody.access_token}` } }),
      env,
    );
    expect(caller).toEqual({ userId: user.userId, deviceId: device_id });

    // Used once: a second poll gets nothing.
    const again = await expectOAuthError(await poll(auth.device_code), "invalid_grant");
    expect(again.detail).toMatch(/already used/);
  });

  it("the token answer carries the scopes granted (RFC 6749 §5.1), as they are when the token is issued", async () => {
    const user = await createUser();
    const issuedScope = async (approval: Record<string, unknown>, change?: string[]) => {
      const auth = await startLogin();
      const approved = await call("POST", "/api/devices/approve", {
        body: { user_code: auth.user_code, ...approval },
        headers: { cookie: user.cookie },
      });
      const { device_id } = await jsonOf<{ device_id: string }>(approved);
      if (change)
        await call("PATCH", `/api/devices/${device_id}`, {
          body: { scopes: change },
          headers: { cookie: user.cookie },
        });
      return (await jsonOf<{ scope: string }>(await poll(auth.device_code))).scope;
    };
    expect(await issuedScope({ library: true })).toBe("library");
    expect(await issuedScope({})).toBe("");
    expect(await issuedScope({ library: true }, [])).toBe("");
  });

  it("two polls racing after approval get one token between them", async () => {
    const user = await createUser();
    const auth = await startLogin();
    expect((await approve(user, auth.user_code)).status).toBe(200);
    const [a, b] = await Promise.all([poll(auth.device_code), poll(auth.device_code)]);
    expect([a.status, b.status].sort()).toEqual([200, 400]);
    const winner = await jsonOf<{ access_token: string; device_id: string }>(a.status === 200 ? a : b);
    await expectOAuthError(a.status === 200 ? b : a, "invalid_grant");
    const res = await call("GET", "/api/devices", { headers: { cookie: user.cookie } });
    expect(await jsonOf<Array<{ id: string }>>(res)).toEqual([expect.objectContaining({ id: winner.device_id })]);
    await expect(
      authenticateDevice(
        new Request("http://localhost/x", { headers: { authorization: `Bearer ${winner.access_token}` } }),
        env,
      ),
    ).resolves.toMatchObject({ deviceId: winner.device_id });
  });

  it("a denied code answers access_denied and makes no device", async () => {
    const user = await createUser();
    const auth = await startLogin();
    const denied = await call("POST", "/api/devices/deny", {
      body: { user_code: auth.user_code },
      headers: { authorization: user.apiAuth },
    });
    expect(denied.status).toBe(200);
    await expectOAuthError(await poll(auth.device_code), "access_denied");
    expect((await approve(user, auth.user_code)).status).toBe(409);
    const n = await env.DB.prepare("SELECT COUNT(*) AS n FROM devices WHERE user_id = ?")
      .bind(user.userId)
      .first<{ n: number }>();
    expect(n!.n).toBe(0);
  });

  it("an expired code answers expired_token, and can no longer be approved", async () => {
    const user = await createUser();
    const auth = await startLogin();
    await env.DB.prepare("UPDATE device_codes SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, codeId(auth.device_code))
      .run();
    await expectOAuthError(await poll(auth.device_code), "expired_token");
    const res = await approve(user, auth.user_code);
    expect(res.status).toBe(410);
    expect((await jsonOf(res)).detail).toMatch(/expired/);
  });

  it("an unknown or forged device code is invalid_grant", async () => {
    const auth = await startLogin();
    const forged = auth.device_code.slice(0, -1) + (auth.device_code.endsWith("A") ? "B" : "A");
    await expectOAuthError(await poll(forged), "invalid_grant");
    await expectOAuthError(await poll("lbc_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "invalid_grant");
    await expectOAuthError(await poll("nonsense"), "invalid_grant");
  });

  it("speaks the RFC's form encoding on both endpoints", async () => {
    const user = await createUser();
    const res = await call("POST", "/api/devices/authorize", { form: { client_id: "lembas-cli", name: "desk" } });
    expect(res.status).toBe(200);
    const auth = await jsonOf<Authorization>(res);
    const pending = await call("POST", "/api/devices/token", {
      form: { grant_type: GRANT, device_code: auth.device_code },
    });
    await expectOAuthError(pending, "authorization_pending");
    expect((await approve(user, auth.user_code)).status).toBe(200);
    await waitInterval(auth.device_code);
    const issued = await call("POST", "/api/devices/token", {
      form: { grant_type: GRANT, device_code: auth.device_code, client_id: "lembas-cli" },
    });
    expect(issued.status).toBe(200);
    expect(await jsonOf(issued)).toMatchObject({ token_type: "Bearer", access_token: expect.stringMatching(/^lbd_/) });
  });

  it("refuses a bad token request in the RFC's terms", async () => {
    const auth = await startLogin();
    await expectOAuthError(
      await call("POST", "/api/devices/token", { form: { grant_type: "password", device_code: auth.device_code } }),
      "unsupported_grant_type",
    );
    const missing = await expectOAuthError(
      await call("POST", "/api/devices/token", { form: { grant_type: GRANT } }),
      "invalid_request",
    );
    expect(missing.detail).toMatch(/device_code/);
    await expectOAuthError(await call("POST", "/api/devices/token", { raw: "{not json" }), "invalid_request");
  });

  it("refuses a malformed authorize body with a sentence, and accepts an empty one", async () => {
    const bad = await call("POST", "/api/devices/authorize", { raw: "{not json" });
    expect(bad.status).toBe(400);
    expect((await jsonOf(bad)).detail).toMatch(/not valid JSON|neither/);
    const long = await call("POST", "/api/devices/authorize", { body: { name: "x".repeat(101) } });
    expect(long.status).toBe(400);
    expect((await jsonOf(long)).detail).toMatch(/^name: /);
    const empty = await call("POST", "/api/devices/authorize");
    expect(empty.status).toBe(200);
  });

  it("approving needs a known code; a device with no name is named after its host", async () => {
    const user = await createUser();
    const unknown = await approve(user, "BBBB-BBBB");
    expect(unknown.status).toBe(404);
    expect((await jsonOf(unknown)).detail).toMatch(/BBBB-BBBB/);
    expect((await approve(user, "not a code")).status).toBe(404);
    const auth = await startLogin({ host: "build-box" });
    const res = await approve(user, auth.user_code);
    expect(await jsonOf(res)).toMatchObject({ name: "build-box" });
    const twice = await approve(user, auth.user_code);
    expect(twice.status).toBe(409);
    expect((await jsonOf(twice)).detail).toMatch(/already approved/);
  });

  it("a device revoked between approval and the token gets access_denied", async () => {
    const user = await createUser();
    const auth = await startLogin();
    const { device_id } = await jsonOf<{ device_id: string }>(await approve(user, auth.user_code));
    expect((await call("DELETE", `/api/devices/${device_id}`, { headers: { cookie: user.cookie } })).status).toBe(204);
    await expectOAuthError(await poll(auth.device_code), "access_denied");
  });
});
