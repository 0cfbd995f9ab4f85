/**
 * The web UI's security headers in a real browser (Debian's Chromium) against the real Worker under `wrangler dev`,
 * its assets layer included: the approval page refuses to be framed — a page of another origin that frames it sees
 * nothing of it — and the whole UI works under its Content-Security-Policy without one violation: signing up,
 * the device list, approving a device by a code in the URL, and a live device page with a session, a streamed
 * answer and an approval card.
 */
import { readdir, readFile } from "node:fs/promises";
import { createServer } from "node:http";
import path from "node:path";
import type { AddressInfo } from "node:net";
import * as acp from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { ROOT, tempDir } from "../bridge/helpers/run-bridge.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { launchChromium } from "./browser.js";
import { LembasDevice } from "../e2e/helpers/lembas-device.js";
import { watchCsp, type CspWatch } from "./csp-watch.js";

const SESSION_ID = "ses_csp_1";
const PUBLIC = path.join(ROOT, "web/public");

let instance: Instance;
let browser: Browser;
let page: Page;
let csp: CspWatch;
let device: LembasDevice | undefined;

async function post<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`${instance.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status, `POST ${path}`).toBe(200);
  return (await res.json()) as T;
}

beforeAll(async () => {
  instance = await startInstance();
  browser = await launchChromium();
  page = await (await browser.newContext()).newPage();
  csp = await watchCsp(page);
});

afterAll(async () => {
  await device?.close();
  await browser?.close();
  await instance?.stop();
});

describe("framing", () => {
  it("a page of another origin that frames /device sees nothing of it", async () => {
    // The attacker's page, from a server of its own: another origin (another port), on loopback too, since the
    // browser lets no public page frame a loopback address at all (local network access) — which would hide
    // whether the instance's own headers refuse it.
    const site = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(
        `<!doctype html><title>win a prize</title><iframe src="${instance.origin}/device?code=BCDF-GHJK"></iframe>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    const attackerOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    const attacker = await (await browser.newContext()).newPage();
    const refusals: string[] = [];
    attacker.on("console", (m) => refusals.push(m.text()));
    const framed = attacker.waitForEvent("response", (r) => r.url().startsWith(`${instance.origin}/device`));
    await attacker.goto(attackerOrigin);
    const response = await framed;
    // The instance did answer the frame's request — with headers that forbid showing it in a frame.
    expect(response.status()).toBe(200);
    expect(await response.headerValue("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(await response.headerValue("x-frame-options")).toBe("DENY");
    await expect.poll(() => refusals.some((line) => /frame-ancestors/.test(line))).toBe(true);
    const frame = attacker.frames().find((f) => f !== attacker.mainFrame());
    expect(frame).toBeDefined();
    expect(frame!.url()).not.toContain("/device");
    expect(await frame!.locator("#root").count()).toBe(0);
    await attacker.context().close();
    site.close();
  });

  it.each(["/", "/device", "/no/such/page"])("%s is served with the security headers", async (path) => {
    const probe = await (await browser.newContext()).newPage();
    const response = (await probe.goto(`${instance.origin}${path}`))!;
    expect(response.status()).toBe(200);
    const headers = await response.allHeaders();
    expect(headers["content-security-policy"]).toMatch(/frame-ancestors 'none'/);
    expect(headers["x-frame-options"]).toBe("DENY");
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["referrer-policy"]).toBe("no-referrer");
    await probe.context().close();
  });
});

describe("source maps", () => {
  it("are built beside the web UI's scripts, named by none of them and served to nobody", async () => {
    const built = (await readdir(PUBLIC, { recursive: true })).filter((file) => file.endsWith(".map"));
    expect(built).toContain("js/main.js.map");
    const scripts = (await readdir(PUBLIC, { recursive: true })).filter((file) => file.endsWith(".js"));
    for (const script of scripts)
      expect(await readFile(path.join(PUBLIC, script), "utf8"), script).not.toMatch(/sourceMappingURL/);
    for (const map of built) {
      const response = await fetch(`${instance.origin}/${map}`);
      const body = await response.text();
      expect(body, `GET /${map}`).not.toContain('"mappings"');
    }
  });
});

describe("the web UI under its Content-Security-Policy", () => {
  it("signs up and lists devices", async () => {
    await page.goto(instance.origin);
    await page.getByLabel("Email").fill("owner@example.org");
    await page.getByLabel("Password", { exact: true }).fill("a long enough password");
    await page.getByLabel("Password again").fill("a long enough password");
    await page.getByRole("button", { name: "Create the account" }).click();
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    expect(csp.violations()).toEqual([]);
  });

  it("approves a device by the code in the URL, then shows it live with a session, an answer and a card", async () => {
    const code = await post<{ device_code: string; user_code: string; verification_uri_complete: string }>(
      "/api/devices/authorize",
      { name: "csp-laptop", host: "csp-laptop", platform: "linux" },
    );
    await page.goto(code.verification_uri_complete);
    await page.getByLabel(/I started this login myself/).check();
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByText("Approved:").waitFor();
    const { access_token } = await post<{ access_token: string }>("/api/devices/token", {
      device_code: code.device_code,
    });

    const root = await tempDir("csp-root");
    device = new LembasDevice({
      origin: instance.origin,
      token: access_token,
      capabilities: [],
      roots: [root],
      host: "csp-laptop",
    });
    device.app
      .onRequest(acp.methods.agent.session.new, () => ({ sessionId: SESSION_ID }))
      .onRequest(acp.methods.agent.session.prompt, async ({ client }) => {
        await client.notify(acp.methods.client.session.update, {
          sessionId: SESSION_ID,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "**Done**, see `a.ts`." } },
        });
        await client.request(acp.methods.client.session.requestPermission, {
          sessionId: SESSION_ID,
          toolCall: { toolCallId: "call_1", title: "Edit a.ts", kind: "edit", status: "pending" },
          options: [
            { optionId: "once", name: "Allow once", kind: "allow_once" },
            { optionId: "deny", name: "Deny", kind: "reject_once" },
          ],
        });
        return { stopReason: "end_turn" };
      });
    await device.link();

    await page.goto(instance.origin);
    await page.locator(".devices a").click();
    await page.locator("#link-state.online").waitFor();
    await page.getByLabel("Folder on the device").fill(root);
    await page.getByRole("button", { name: "Start" }).click();
    const prompt = page.locator("textarea[name=prompt]:enabled");
    await prompt.fill("Tidy up");
    await prompt.press("Enter");
    await page.getByText("Done").waitFor();
    const card = page.locator('.card-request[data-tool-call-id="call_1"]');
    await card.getByRole("button", { name: "Allow once" }).click();
    await page.locator('.turn-end[data-stop-reason="end_turn"]').waitFor({ timeout: 30_000 });
    expect(csp.violations()).toEqual([]);
  });
});
