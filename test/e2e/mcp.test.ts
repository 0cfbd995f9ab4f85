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
import { firstPerson, loginDevice } from "./helpers/accounts.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { startUpstream, type Upstream } from "./helpers/openai-upstream.js";

let upstream: Upstream;
let instance: Instance;
let reader: string; // a device token with the library scope
let stranger: string; // one without it

beforeAll(async () => {
  upstream = await startUpstream();
  const providers = {
    local: { base_url: upstream.baseUrl, models: { "bag-of-words": { kind: "embedding", price_in: 100 } } },
  };
  instance = await startInstance({
    vars: { PROVIDERS: JSON.stringify(providers), PROVIDER_LOCAL_API_KEY: "sk-local-upstream" },
  });
  const person = await firstPerson(instance.origin);
  reader = (await loginDevice(instance.origin, person, "reader", { library: true })).token;
  stranger = (await loginDevice(instance.origin, person, "no-library")).token;
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
    await client.connect(new StreamableHTTPClientTransport(url(), { requestInit: auth(reader) }));
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

  it("refuses a device without the library scope, saying how to get it", async () => {
    const outsider = new Client({ name: "lembas-e2e", version: "1.0.0" });
    await outsider.connect(new StreamableHTTPClientTransport(url(), { requestInit: auth(stranger) }));
    const result = await outsider.callTool({ name: "library_search", arguments: { query: "rope" } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(/does not have the library scope/);
    await outsider.close();
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
        requestInit: auth(reader),
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
    const usage = await fetch(`${instance.origin}/v1/usage`, { headers: { authorization: `Bearer ${reader}` } });
    const { device } = (await usage.json()) as { device: { tokens_in: number; cost: number } };
    const embedded = upstream.received.filter((r) => r.path === "/v1/embeddings");
    expect(embedded.length).toBeGreaterThanOrEqual(7); // three documents, at least four searches
    expect(device.tokens_in).toBeGreaterThan(0);
    expect(device.cost).toBe((device.tokens_in * 100) / 1e6);
    expect(embedded.every((r) => r.authorization === "Bearer sk-local-upstream")).toBe(true);
  });
});
