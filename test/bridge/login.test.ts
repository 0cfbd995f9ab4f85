/** `lembas-edge login` against a local server playing the instance's device-authorization endpoints (RFC 8628). */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFile, stat } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runBridge, tempDir } from "./helpers/run-bridge.js";

type TokenAnswer = { status: number; body: Record<string, unknown> };

interface DeviceFlowServer {
  origin: string;
  /** What the token endpoint answers, poll by poll; the last one repeats. */
  answers: TokenAnswer[];
  /** When each poll arrived, and with which body. */
  polls: { at: number; body: unknown }[];
  authorizeBody: unknown;
  close(): Promise<void>;
}

async function startDeviceFlowServer(): Promise<DeviceFlowServer> {
  const flow: DeviceFlowServer = { origin: "", answers: [], polls: [], authorizeBody: null, close: async () => {} };
  const http: Server = createServer(async (request, response) => {
    let text = "";
    for await (const chunk of request) text += String(chunk);
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    if (request.url === "/.well-known/lembas.json") {
      return reply(200, {
        protocol: 1,
        protocols: [1, 2],
        endpoints: {
          device_authorization: `${flow.origin}/api/devices/authorize`,
          device_token: `${flow.origin}/api/devices/token`,
        },
      });
    }
    if (request.url === "/api/devices/authorize" && request.method === "POST") {
      flow.authorizeBody = JSON.parse(text);
      return reply(200, {
        device_code: "lbc_code_secret",
        user_code: "WDJB-MJHT",
        verification_uri: `${flow.origin}/device`,
        verification_uri_complete: `${flow.origin}/device?code=WDJB-MJHT`,
        expires_in: 600,
        interval: 0,
      });
    }
    if (request.url === "/api/devices/token" && request.method === "POST") {
      flow.polls.push({ at: Date.now(), body: JSON.parse(text) });
      const answer = flow.answers.length > 1 ? flow.answers.shift()! : flow.answers[0]!;
      return reply(answer.status, answer.body);
    }
    reply(404, { detail: "no such route" });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  flow.origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  flow.close = () => new Promise<void>((resolve) => http.close(() => resolve()));
  return flow;
}

const pending: TokenAnswer = { status: 400, body: { error: "authorization_pending", detail: "not approved yet" } };
const granted: TokenAnswer = {
  status: 200,
  body: { access_token: "lbd_dev9_secret", token_type: "Bearer", device_id: "dev9" },
};

let flow: DeviceFlowServer;
let configHome: string;

beforeEach(async () => {
  flow = await startDeviceFlowServer();
  configHome = await tempDir("login");
});
afterEach(() => flow.close());

describe("lembas-edge login", () => {
  it("shows the code and address, honours slow_down, and keeps the token readable by its owner only", async () => {
    flow.answers = [pending, { status: 400, body: { error: "slow_down", detail: "too fast" } }, pending, granted];
    const run = runBridge(["login", `${flow.origin}/some/page`], { configHome });
    expect(await run.exited).toBe(0);

    expect(run.stderr()).toContain(`${flow.origin}/device?code=WDJB-MJHT`);
    expect(run.stderr()).toContain("WDJB-MJHT");
    expect(run.stdout()).toBe("");
    expect(flow.authorizeBody).toMatchObject({ platform: process.platform });
    expect(flow.polls.map((poll) => poll.body)).toEqual(
      Array(4).fill({ grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: "lbc_code_secret" }),
    );
    // The interval was 0 s; slow_down made it 5 s for every later poll.
    expect(flow.polls[2]!.at - flow.polls[1]!.at).toBeGreaterThanOrEqual(4_900);
    expect(flow.polls[3]!.at - flow.polls[2]!.at).toBeGreaterThanOrEqual(4_900);

    const dir = path.join(configHome, "lembas-edge");
    const file = path.join(dir, "credentials.json");
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({
      [flow.origin]: { instance: flow.origin, device_id: "dev9", token: "lbd_dev9_secret" },
    });
  }, 30_000);

  it("keeps the logins of other instances when logging in again", async () => {
    flow.answers = [granted];
    expect(await runBridge(["login", flow.origin], { configHome }).exited).toBe(0);
    const other = await startDeviceFlowServer();
    other.answers = [
      { status: 200, body: { access_token: "lbd_dev2_other", token_type: "Bearer", device_id: "dev2" } },
    ];
    try {
      expect(await runBridge(["login", other.origin], { configHome }).exited).toBe(0);
    } finally {
      await other.close();
    }
    const saved = JSON.parse(await readFile(path.join(configHome, "lembas-edge", "credentials.json"), "utf8"));
    expect(Object.keys(saved).sort()).toEqual([flow.origin, other.origin].sort());
  });

  it.each([
    ["access_denied", "the login was denied at the instance; nothing was saved"],
    ["expired_token", "the code expired before anyone approved it; run lembas-edge login again"],
  ])("stops on %s with a clear sentence and saves nothing", async (error, sentence) => {
    flow.answers = [pending, { status: 400, body: { error, detail: "no" } }];
    const run = runBridge(["login", flow.origin], { configHome });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(sentence);
    await expect(stat(path.join(configHome, "lembas-edge", "credentials.json"))).rejects.toThrow(/ENOENT/);
  });

  it("names the device with --name (the host name otherwise), and refuses an empty name", async () => {
    flow.answers = [granted];
    expect(await runBridge(["login", "--name", "codex on the laptop", flow.origin], { configHome }).exited).toBe(0);
    expect(flow.authorizeBody).toMatchObject({ name: "codex on the laptop", host: hostname() });
    expect(await runBridge(["login", flow.origin], { configHome }).exited).toBe(0);
    expect(flow.authorizeBody).toMatchObject({ name: hostname(), host: hostname() });
    const empty = runBridge(["login", flow.origin, "--name="], { configHome });
    expect(await empty.exited).toBe(2);
    expect(empty.stderr()).toContain("--name needs a name of 1 to 100 characters");
  });

  it("refuses an address that is not http(s)", async () => {
    const run = runBridge(["login", "ftp://example.org"], { configHome });
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain("the instance address must start with http:// or https://");
  });
});
