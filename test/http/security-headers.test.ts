/**
 * Security headers: every page of the web UI — the approval page and the single-page app's fallback for a page that
 * does not exist included — is served by the assets layer with a policy that forbids framing and sniffing and runs
 * no inline script but the page's own one, named by its hash; every answer of the Worker, a 404 included, carries nosniff and may be framed by no one.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { call } from "../helpers/requests";

/** A browser navigating to a page. */
const page = (path: string) =>
  env.ASSETS.fetch(`http://localhost${path}`, { headers: { accept: "text/html", "sec-fetch-mode": "navigate" } });

function directives(csp: string | null): Map<string, string> {
  return new Map(
    (csp ?? "")
      .split(";")
      .map((d) => d.trim())
      .filter(Boolean)
      .map((d) => {
        const [name, ...values] = d.split(/\s+/);
        return [name!, values.join(" ")];
      }),
  );
}

/** The page's inline scripts, each as CSP names one by its hash (`'sha256-…'`). */
async function inlineScriptHashes(html: string): Promise<string[]> {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(async ([, source]) => {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(source)));
    return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
  });
  return Promise.all(hashes);
}

describe("the web UI's pages", () => {
  it.each(["/", "/device", "/device?code=BCDF-GHJK", "/no/such/page"])(
    "%s: not framed, not sniffed, no referrer",
    async (path) => {
      const res = await page(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain('<div id="root">');
      const csp = directives(res.headers.get("content-security-policy"));
      expect(csp.get("default-src")).toBe("'self'");
      // Its own files, and the one script inline in the page (web/src/early.ts) by its hash: no other inline script.
      const inline = await inlineScriptHashes(html);
      expect(inline).toHaveLength(1);
      expect(csp.get("script-src")).toBe(`'self' ${inline[0]}`);
      expect(csp.get("frame-ancestors")).toBe("'none'");
      expect(csp.get("base-uri")).toBe("'none'");
      expect(csp.get("form-action")).toBe("'self'");
      expect(csp.get("object-src")).toBe("'none'");
      expect([...csp.values()].join(" ")).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    },
  );

  it("a file that is not a page (the app's manifest) is served with nosniff too", async () => {
    const res = await env.ASSETS.fetch("http://localhost/manifest.webmanifest");
    expect(res.headers.get("content-type")).toMatch(/^application\/manifest\+json/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("the Worker's answers", () => {
  it.each([
    ["a 404", "GET", "/api/no/such/route", 404],
    ["discovery", "GET", "/.well-known/lembas.json", 200],
    ["a refusal", "GET", "/api/devices", 401],
  ])("%s: JSON with nosniff, framed by no one", async (_what, method, path, status) => {
    const res = await call(method, path);
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(directives(res.headers.get("content-security-policy")).get("frame-ancestors")).toBe("'none'");
  });

  it("an answer that comes from the device's object carries them too", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const res = await SELF.fetch(`http://localhost/api/devices/${device.deviceId}/rpc`, {
      method: "POST",
      headers: { authorization: user.apiAuth, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "_instance/status" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 1, result: { link: "down" } });
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
