/**
 * The library page and the approval's library choice in a real browser (Debian's Chromium) against the real Worker
 * under `wrangler dev`, whose embeddings come from a local provider: a person adds a document by pasting it and one
 * from a Markdown file, finds the right one first by meaning, deletes one; and approves a device login with the
 * library allowed — all under the page's Content-Security-Policy with no violation.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { firstPerson, type Person } from "../e2e/helpers/accounts.js";
import { startInstance, type Instance } from "../e2e/helpers/instance.js";
import { startUpstream, type Upstream } from "../e2e/helpers/openai-upstream.js";
import { launchChromium } from "./browser.js";
import { watchCsp, type CspWatch } from "./csp-watch.js";

let upstream: Upstream;
let instance: Instance;
let person: Person;
let browser: Browser;
let page: Page;
let csp: CspWatch;

beforeAll(async () => {
  upstream = await startUpstream();
  const providers = { local: { base_url: upstream.baseUrl, models: { words: { kind: "embedding", price_in: 100 } } } };
  instance = await startInstance({
    vars: { PROVIDERS: JSON.stringify(providers), PROVIDER_LOCAL_API_KEY: "sk-local-upstream" },
  });
  person = await firstPerson(instance.origin);
  browser = await launchChromium();
  page = await (await browser.newContext()).newPage();
  csp = await watchCsp(page);
  await page.goto(instance.origin);
  await page.getByLabel("Email").fill("owner@example.org");
  await page.getByLabel("Password").fill("a long enough password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Devices" }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await instance?.stop();
  await upstream?.stop();
});

const documents = () => page.locator(".documents h3").allTextContents();

describe("the library page", () => {
  it("adds a pasted document and one from a Markdown file", async () => {
    await page.getByRole("link", { name: "Library" }).click();
    await page.getByRole("heading", { name: "Library" }).waitFor();
    await page.getByText("No document yet.").waitFor();

    await page.getByLabel("Title").fill("Elven rope");
    await page.getByLabel("Source (optional)").fill("https://example.org/rope");
    await page
      .getByLabel("Text or Markdown")
      .fill("Elven rope is light and strong, grey as a shadow, and it unties itself on call.");
    await page.getByRole("button", { name: "Add" }).click();
    await page.getByText("Added Elven rope").waitFor();

    await page.getByLabel("Or a text file").setInputFiles({
      name: "mirror.md",
      mimeType: "text/markdown",
      buffer: Buffer.from("# The mirror\n\nGaladriel's mirror is a basin of water that shows things that may be."),
    });
    await expect.poll(() => page.getByLabel("Title").inputValue()).toBe("mirror");
    expect(await page.getByLabel("Text or Markdown").inputValue()).toContain("basin of water");
    await page.getByRole("button", { name: "Add" }).click();
    await page.getByText("Added mirror").waitFor();
    await expect.poll(documents).toEqual(["mirror", "Elven rope"]);
    expect(await page.locator(".document", { hasText: "Elven rope" }).textContent()).toContain(
      "https://example.org/rope",
    );
  });

  it("finds the right document first by meaning", async () => {
    await page.getByLabel("Search by meaning").fill("a rope that unties itself when called");
    await page.getByRole("button", { name: "Search" }).click();
    const results = page.getByRole("list", { name: "Search results" }).locator("li strong");
    await expect.poll(() => results.allTextContents()).toEqual(["Elven rope", "mirror"]);
    await page.getByLabel("Search by meaning").fill("a basin of water");
    await page.getByRole("button", { name: "Search" }).click();
    await expect.poll(() => results.first().textContent()).toBe("mirror");
  });

  it("deletes a document after asking", async () => {
    const row = page.locator(".document", { hasText: "Elven rope" });
    await row.getByRole("button", { name: "Delete" }).click();
    await row.getByText("Delete Elven rope from the library?").waitFor();
    await row.getByRole("button", { name: "Delete" }).click();
    await expect.poll(documents).toEqual(["mirror"]);
  });
});

describe("approving a device", () => {
  it("gives the library only when the person ticks it", async () => {
    const authorize = async () => {
      const res = await fetch(`${instance.origin}/api/devices/authorize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "reader", host: "reader.local" }),
      });
      return ((await res.json()) as { user_code: string }).user_code;
    };
    const approve = async (library: boolean) => {
      await page.goto(`${instance.origin}/device?code=${await authorize()}`);
      await page.getByText("asks to join the account").waitFor();
      const box = page.getByLabel("It may use my library");
      expect(await box.isChecked()).toBe(false);
      if (library) await box.check();
      await page.getByLabel("I started this login myself").check();
      await page.getByRole("button", { name: "Approve" }).click();
      await page.getByText("Approved:").waitFor();
    };
    await approve(true);
    await approve(false);
    const res = await fetch(`${instance.origin}/api/devices`, { headers: { authorization: person.apiAuth } });
    const devices = (await res.json()) as { scopes: string[]; created_at: number }[];
    expect(devices.sort((a, b) => a.created_at - b.created_at).map((d) => d.scopes)).toEqual([["library"], []]);
  });

  it("ran without a Content-Security-Policy violation", () => {
    expect(csp.violations()).toEqual([]);
  });
});
