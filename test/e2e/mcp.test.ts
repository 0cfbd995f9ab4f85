/**
 * The official MCP TypeScript SDK clients against /mcp on the real Worker under `wrangler dev`, with a local provider
 * for its embeddings: the 1.x SDK (@modelcontextprotocol/sdk, the 2025 era most MCP clients speak: initialize, then
 * requests) and the 2.x client pinned to the current specification (2026-07-28: no handshake, every request
 * self-described). Each adds documents, finds the right one first by meaning, deletes; a device without the library
 * scope is refused; and the embeddings it took are the person's usage.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstPerson, loginDevice, type LoggedInDevice, type Person } from "./helpers/accounts.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { startUpstream, type Upstream } from "./helpers/openai-upstream.js";

let upstream: Upstream;
let instance: Instance;
let person: Person;
let reader: LoggedInDevice; // a device with the library scope
let stranger: LoggedInDevice; // one without it

beforeAll(async () => {
  upstream = await startUpstream();
  const providers = {
    local: { base_url: upstream.baseUrl, models: { "bag-of-words": { kind: "embedding", price_in: 100 } } },
  };
  instance = await startInstance({
    vars: { PROVIDERS: JSON.stringify(providers), PROVIDER_LOCAL_API_KEY: "sk-local-upstream" },
  });
  person = await firstPerson(instance.origin);
  reader = await loginDevice(instance.origin, person, "reader", { library: true });
  stranger = await loginDevice(instance.origin, person, "no-library");
});

afterAll(async () => {
  await instance?.stop();
  await upstream?.stop();
});

const url = () => new URL(`${instance.origin}/mcp`);
const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

/** A tool result's structured content (the tools send it as JSON text too). */
function structured<T>(result: Record<string, unknown>): T {
  expect(result.isError).toBeFalsy();
  const [text] = result.content as { type: string; text: string }[];
  expect(JSON.parse(text!.text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

interface Found {
  results: { document_id: string; title: string; score: number }[];
}

describe("the 1.x SDK client (2025 era)", () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: "lembas-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(url(), { requestInit: auth(reader.token) }));
  });
  afterAll(async () => client?.close());

  it("initializes: the server names itself and offers tools", () => {
    expect(client.getServerVersion()).toMatchObject({ name: "lembas-edge" });
    expect(client.getServerCapabilities()).toMatchObject({ tools: {} });
  });

  it("lists the library's tools with their argument schemas", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      "library_search",
      "library_add",
      "library_list",
      "library_get",
      "library_delete",
    ]);
    const search = tools.find((t) => t.name === "library_search")!;
    expect(search.inputSchema).toMatchObject({ type: "object", required: ["query"] });
    expect(search.annotations).toMatchObject({ readOnlyHint: true });
  });

  it("adds two documents, finds the right one first by meaning, and deletes", async () => {
    const add = async (title: string, text: string) =>
      structured<{ document: { id: string } }>(
        await client.callTool({ name: "library_add", arguments: { title, text } }),
      ).document.id;
    const rope = await add(
      "Elven rope",
      "Elven rope is light and strong, grey as a shadow, and it unties itself on call.",
    );
    const mirror = await add(
      "The mirror",
      "Galadriel's mirror is a basin of water that shows things that were, are, or yet may be.",
    );

    const search = async (query: string) =>
      structured<Found>(await client.callTool({ name: "library_search", arguments: { query, limit: 2 } })).results;
    const [first, second] = await search("a rope that unties itself when called");
    expect(first).toMatchObject({ document_id: rope, title: "Elven rope" });
    expect(second!.document_id).toBe(mirror);
    expect(first!.score).toBeGreaterThan(second!.score);
    expect((await search("water basin that shows what may be"))[0]!.document_id).toBe(mirror);

    expect(structured(await client.callTool({ name: "library_delete", arguments: { id: rope } }))).toEqual({
      deleted: rope,
    });
    expect((await search("a rope that unties itself when called")).map((r) => r.document_id)).toEqual([mirror]);
    const listed = structured<{ documents: { id: string }[] }>(
      await client.callTool({ name: "library_list", arguments: {} }),
    );
    expect(listed.documents.map((d) => d.id)).toEqual([mirror]);
  });

  it("shows a device without the library scope no tools, says how to get them, and refuses a call", async () => {
    expect(reader.scope).toBe("library");
    expect(stranger.scope).toBe("");
    const outsider = new Client({ name: "lembas-e2e", version: "1.0.0" });
    await outsider.connect(new StreamableHTTPClientTransport(url(), { requestInit: auth(stranger.token) }));
    expect((await outsider.listTools()).tools).toEqual([]);
    expect(outsider.getInstructions()).toMatch(/need the library scope, which this token does not have; to get them/);
    const result = await outsider.callTool({ name: "library_search", arguments: { query: "rope" } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(/does not have the library scope/);
    await outsider.close();
  });

  it("an API token without the library scope cannot approve a device into the library", async () => {
    // The person's script token was made with no scopes (firstPerson).
    const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${instance.origin}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
    const code = (await (await post("/api/devices/authorize", { host: "planted" })).json()) as {
      user_code: string;
      device_code: string;
    };
    const script = { authorization: person.apiAuth };
    const refused = await post("/api/devices/approve", { user_code: code.user_code, library: true }, script);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ scope: "library", detail: expect.stringMatching(/does not hold/) });
    expect((await post("/api/devices/approve", { user_code: code.user_code }, script)).status).toBe(200);
    const issued = (await (await post("/api/devices/token", { device_code: code.device_code })).json()) as {
      access_token: string;
      scope: string;
    };
    expect(issued.scope).toBe("");

    const device = new Client({ name: "lembas-e2e", version: "1.0.0" });
    await device.connect(new StreamableHTTPClientTransport(url(), { requestInit: auth(issued.access_token) }));
    expect((await device.listTools()).tools).toEqual([]);
    for (const name of ["library_list", "library_search"]) {
      const result = await device.callTool({ name, arguments: { query: "rope" } });
      expect(result.isError, name).toBe(true);
      expect(result.structuredContent, name).toBeUndefined();
    }
    await device.close();
  });
});

describe("the 2.x client pinned to the current specification (2026-07-28)", () => {
  it("speaks the modern era with no handshake, and searches", async () => {
    const sent: { method: string; version: string | null }[] = [];
    const client = new ModernClient(
      { name: "lembas-e2e-modern", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(
      new ModernTransport(url(), {
        requestInit: auth(reader.token),
        fetch: async (input, init) => {
          const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { method?: string }) : {};
          sent.push({ method: body.method ?? "", version: new Headers(init?.headers).get("mcp-protocol-version") });
          return fetch(input, init);
        },
      }),
    );
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(5);
    const added = await client.callTool({
      name: "library_add",
      arguments: { title: "Lembas", text: "Lembas, the elven waybread, keeps a traveller going for a whole day." },
    });
    const id = structured<{ document: { id: string } }>(added).document.id;
    const found = await client.callTool({
      name: "library_search",
      arguments: { query: "elven waybread for travellers" },
    });
    expect(structured<Found>(found).results[0]!.document_id).toBe(id);
    await client.close();

    expect(sent.map((s) => s.method)).not.toContain("initialize");
    expect(sent.filter((s) => s.method).every((s) => s.version === "2026-07-28")).toBe(true);
  });
});

describe("what the library cost", () => {
  it("every embedding was a metered request of the instance's embedding model, the person's usage", async () => {
    const usage = await fetch(`${instance.origin}/v1/usage`, { headers: { authorization: `Bearer ${reader.token}` } });
    const { device } = (await usage.json()) as { device: { tokens_in: number; cost: number } };
    const embedded = upstream.received.filter((r) => r.path === "/v1/embeddings");
    expect(embedded.length).toBeGreaterThanOrEqual(7); // three documents, at least four searches
    expect(device.tokens_in).toBeGreaterThan(0);
    expect(device.cost).toBe((device.tokens_in * 100) / 1e6);
    expect(embedded.every((r) => r.authorization === "Bearer sk-local-upstream")).toBe(true);
  });
});
