/**
 * The MCP server at /mcp, spoken to as raw Streamable HTTP (the official SDK clients drive it in test/e2e/mcp.test.ts):
 * both protocol eras, the header rules of the current one, the library's tools with their scope, metering and
 * bounds.
 */
import { env, SELF } from "cloudflare:test";
import * as z from "zod";
import { describe, expect, it } from "vitest";
import { LIBRARY_TOOLS } from "../../src/http/mcp/library-tools";
import { splitText } from "../../src/library/chunks";
import { createDevice, createUser } from "../helpers/fixtures";
import { usageRows } from "../helpers/v1";
import { call, jsonOf, ORIGIN } from "../helpers/requests";

const MODERN = "2026-07-28";
// biome-ignore lint/suspicious/noExplicitAny: an answer is read loosely; each assertion states the shape it expects
type Answer = Record<string, any>;
const META = "io.modelcontextprotocol/";
let nextId = 1;
/** What a Streamable HTTP client sends with every POST. */
const STREAMABLE = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** One JSON-RPC message to /mcp, as a legacy (2025-era) client sends it after initialize. */
async function legacy(auth: Record<string, string>, method: string, params?: Record<string, unknown>) {
  const res = await SELF.fetch("https://lembas.test/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...auth },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, ...(params && { params }) }),
  });
  return { status: res.status, body: res.status === 202 ? null : await res.json<Answer>() };
}

/** A modern (2026-07-28) request: the version and capabilities in _meta, mirrored in the headers. */
async function modern(
  auth: Record<string, string>,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const meta = { [`${META}protocolVersion`]: MODERN, [`${META}clientCapabilities`]: {} };
  const res = await SELF.fetch("https://lembas.test/mcp", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN,
      "mcp-method": method,
      ...(typeof params.name === "string" && { "mcp-name": params.name }),
      ...auth,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params: { ...params, _meta: meta } }),
  });
  return { status: res.status, body: await res.json<Answer>() };
}

const bearer = (authorization: string) => ({ authorization });
/** An API token with the library scope (made by a sign-in, which holds every scope): all the tools are its. */
async function reader(): Promise<string> {
  const { cookie } = await createUser();
  const made = await call("POST", "/api/tokens", { body: { name: "mcp", scopes: ["library"] }, headers: { cookie } });
  return `Bearer ${(await jsonOf<{ token: string }>(made)).token}`;
}
const tool = async (auth: Record<string, string>, name: string, args: Record<string, unknown>) =>
  (await modern(auth, "tools/call", { name, arguments: args })).body.result;

describe("the legacy era (2025-03-26 … 2025-11-25)", () => {
  it("answers initialize statelessly, takes the initialized notification, lists the tools and pings", async () => {
    const auth = bearer(await reader());
    const init = await legacy(auth, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "test", version: "1" },
    });
    expect(init.status).toBe(200);
    expect(init.body!.result).toMatchObject({
      protocolVersion: "2025-06-18",
      capabilities: { tools: {} },
      serverInfo: { name: "lembas-edge" },
    });
    const unknownVersion = await legacy(auth, "initialize", { protocolVersion: "2024-01-01", capabilities: {} });
    expect(unknownVersion.body!.result.protocolVersion).toBe("2025-11-25");
    const initialized = await SELF.fetch("https://lembas.test/mcp", {
      method: "POST",
      headers: { ...STREAMABLE, ...auth, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    expect(initialized.status).toBe(202);
    const list = await legacy(auth, "tools/list");
    expect(list.body!.result.tools.map((t: { name: string }) => t.name)).toEqual([
      "library_search",
      "library_add",
      "library_list",
      "library_get",
      "library_delete",
    ]);
    expect((await legacy(auth, "ping")).body!.result).toEqual({});
    expect((await legacy(auth, "resources/list")).body!.error.code).toBe(-32601);
  });
});

/** One POST to /mcp as given (headers and body text), with its status, error (if any) and raw body. */
async function rawPost(headers: Record<string, string>, body: string) {
  const res = await SELF.fetch("https://lembas.test/mcp", { method: "POST", headers, body });
  const text = await res.text();
  return { status: res.status, text, answer: text ? (JSON.parse(text) as Answer) : null };
}
const rpc = (method: string, id?: number, params?: Record<string, unknown>) =>
  ({ jsonrpc: "2.0", ...(id !== undefined && { id }), method, ...(params && { params }) }) as const;

describe("the legacy era's Streamable HTTP rules", () => {
  const listing = JSON.stringify(rpc("tools/list", 1));

  it("takes a POST only from a client that accepts JSON and event streams (406)", async () => {
    const auth = bearer(await reader());
    const type = { "content-type": "application/json" };
    for (const accept of [
      "text/html",
      "application/json",
      "text/event-stream",
      "application/json;q=0, text/event-stream",
    ]) {
      const res = await rawPost({ ...type, ...auth, accept }, listing);
      expect(res.status, accept).toBe(406);
      expect(res.answer, accept).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32000 } });
      expect(res.answer!.error.message).toMatch(
        /Not Acceptable: Accept must list application\/json and text\/event-stream/,
      );
    }
    expect((await rawPost({ ...type, ...auth }, listing)).status).toBe(406);
    for (const accept of ["text/event-stream, application/json", "*/*", "application/*, text/*;q=0.5"])
      expect((await rawPost({ ...type, ...auth, accept }, listing)).answer!.result.tools, accept).toHaveLength(5);
  });

  it("takes only a JSON body (415)", async () => {
    const auth = bearer(await reader());
    for (const type of ["text/plain", "application/jsonl", "application/x-www-form-urlencoded"]) {
      const res = await rawPost({ accept: STREAMABLE.accept, "content-type": type, ...auth }, listing);
      expect(res.status, type).toBe(415);
      expect(res.answer!.error).toEqual({
        code: -32000,
        message: "Unsupported Media Type: Content-Type must be application/json",
      });
    }
    const charset = { accept: STREAMABLE.accept, "content-type": "Application/JSON; charset=utf-8", ...auth };
    expect((await rawPost(charset, listing)).status).toBe(200);
  });

  it("answers a body that is not JSON with -32700 and one that is not JSON-RPC with -32600", async () => {
    const auth = { ...STREAMABLE, ...bearer(await reader()) };
    const unparsed = await rawPost(auth, '{"jsonrpc":"2.0",');
    expect(unparsed.status).toBe(400);
    expect(unparsed.answer).toMatchObject({
      id: null,
      error: { code: -32700, message: expect.stringMatching(/^Parse error/) },
    });
    const bodies = {
      '"ping"': /JSON-RPC 2.0 object/,
      '{"jsonrpc":"1.0","id":1,"method":"ping"}': /not a JSON-RPC 2.0 message/,
      '{"jsonrpc":"2.0","id":1}': /neither a method nor a result or error/,
      '{"jsonrpc":"2.0","id":{},"method":"ping"}': /not a JSON-RPC 2.0 message/,
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["library_list"]}':
        /params of tools\/call must be an object/,
      [`{"jsonrpc":"2.0","id":"${"x".repeat(201)}","method":"ping"}`]: /string id is at most 200/,
    };
    for (const [body, message] of Object.entries(bodies)) {
      const res = await rawPost(auth, body);
      expect(res.status, body).toBe(400);
      expect(res.answer!.error.code, body).toBe(-32600);
      expect(res.answer!.error.message, body).toMatch(/^Invalid Request: /);
      expect(res.answer!.error.message, body).toMatch(message);
    }
  });

  it("answers a body of notifications or responses alone with 202 and no body", async () => {
    const auth = { ...STREAMABLE, ...bearer(await reader()) };
    const bodies = [
      rpc("notifications/cancelled", undefined, { requestId: 3 }),
      { jsonrpc: "2.0", id: 7, result: {} },
      { jsonrpc: "2.0", id: 8, error: { code: -32601, message: "no sampling here" } },
      [rpc("notifications/initialized"), { jsonrpc: "2.0", id: 9, result: {} }],
    ];
    for (const body of bodies) {
      const res = await rawPost(auth, JSON.stringify(body));
      expect(res, JSON.stringify(body)).toMatchObject({ status: 202, text: "" });
    }
  });

  it("takes batches in 2025-03-26 (the header's default) and refuses them from 2025-06-18 on", async () => {
    const auth = { ...STREAMABLE, ...bearer(await reader()) };
    const batch = JSON.stringify([
      rpc("ping", 1),
      rpc("notifications/initialized"),
      rpc("tools/list", 2),
      rpc("x/y", 3),
    ]);
    const eras: Record<string, string>[] = [{}, { "mcp-protocol-version": "2025-03-26" }];
    for (const era of eras) {
      const res = await rawPost({ ...auth, ...era }, batch);
      expect(res.status).toBe(200);
      expect(res.answer!.map((a: Answer) => a.id)).toEqual([1, 2, 3]);
      expect(res.answer![0].result).toEqual({});
      expect(res.answer![1].result.tools).toHaveLength(5);
      expect(res.answer![2].error.code).toBe(-32601);
    }
    const alone = await rawPost(auth, JSON.stringify([rpc("ping", 4)]));
    expect(alone.answer).toEqual([{ jsonrpc: "2.0", id: 4, result: {} }]);
    for (const version of ["2025-06-18", "2025-11-25"]) {
      const res = await rawPost({ ...auth, "mcp-protocol-version": version }, batch);
      expect(res.status, version).toBe(400);
      expect(res.answer!.error).toMatchObject({ code: -32600, message: expect.stringMatching(/2025-03-26 only/) });
    }
    const refusals = {
      "[]": /an empty batch/,
      [JSON.stringify(Array.from({ length: 101 }, (_, i) => rpc("ping", i)))]: /more than 100 messages/,
      [JSON.stringify([rpc("ping", 1), { jsonrpc: "2.0", id: 2 }])]: /message 2 of the batch/,
      [JSON.stringify([rpc("initialize", 1, { protocolVersion: "2025-03-26", capabilities: {} }), rpc("ping", 2)])]:
        /initialize must be sent alone/,
    };
    for (const [body, message] of Object.entries(refusals)) {
      const res = await rawPost(auth, body);
      expect(res.status, body.slice(0, 60)).toBe(400);
      expect(res.answer!.error).toMatchObject({ code: -32600, message: expect.stringMatching(message) });
    }
  });

  it("refuses an MCP-Protocol-Version it does not serve (400), except on initialize (where it is agreed)", async () => {
    const auth = { ...STREAMABLE, ...bearer(await reader()) };
    for (const version of ["1900-01-01", "not-a-version", "2024-11-05"]) {
      const res = await rawPost({ ...auth, "mcp-protocol-version": version }, listing);
      expect(res.status, version).toBe(400);
      expect(res.answer!.error).toEqual({
        code: -32000,
        message: `Bad Request: unsupported protocol version ${version} (supported: 2025-11-25, 2025-06-18, 2025-03-26)`,
      });
    }
    for (const era of [{}, ...["2025-11-25", "2025-06-18", "2025-03-26"].map((v) => ({ "mcp-protocol-version": v }))])
      expect((await rawPost({ ...auth, ...era }, listing)).answer!.result.tools).toHaveLength(5);
    for (const asked of ["2025-03-26", "2025-06-18", "2025-11-25", "2099-01-01"]) {
      const init = rpc("initialize", 1, {
        protocolVersion: asked,
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      });
      const res = await rawPost({ ...auth, "mcp-protocol-version": "1900-01-01" }, JSON.stringify(init));
      expect(res.status, asked).toBe(200);
      expect(res.answer!.result.protocolVersion, asked).toBe(asked === "2099-01-01" ? "2025-11-25" : asked);
    }
  });
});

describe("the modern era (2026-07-28)", () => {
  it("discovers, and marks every result complete with the server's identity", async () => {
    const auth = bearer(await reader());
    const found = await modern(auth, "server/discover");
    expect(found.status).toBe(200);
    expect(found.body.result).toMatchObject({
      resultType: "complete",
      supportedVersions: expect.arrayContaining([MODERN, "2025-11-25"]),
      capabilities: { tools: {} },
      _meta: { [`${META}serverInfo`]: { name: "lembas-edge" } },
    });
    const list = await modern(auth, "tools/list");
    expect(list.body.result).toMatchObject({
      resultType: "complete",
      ttlMs: expect.any(Number),
      cacheScope: "private",
    });
  });

  it("refuses headers that disagree with the body (-32020), an unknown version (-32022) and method (404)", async () => {
    const auth = bearer(await reader());
    const wrongMethod = await modern(auth, "tools/list", {}, { "mcp-method": "tools/call" });
    expect(wrongMethod).toMatchObject({ status: 400, body: { error: { code: -32020 } } });
    const noVersion = await modern(auth, "tools/list", {}, { "mcp-protocol-version": "2025-11-25" });
    expect(noVersion).toMatchObject({ status: 400, body: { error: { code: -32020 } } });
    const wrongName = await modern(auth, "tools/call", { name: "library_list", arguments: {} }, { "mcp-name": "x" });
    expect(wrongName).toMatchObject({ status: 400, body: { error: { code: -32020 } } });

    const future = await SELF.fetch("https://lembas.test/mcp", {
      method: "POST",
      headers: { ...auth, "mcp-protocol-version": "2030-01-01", "mcp-method": "tools/list" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
        params: { _meta: { [`${META}protocolVersion`]: "2030-01-01", [`${META}clientCapabilities`]: {} } },
      }),
    });
    expect(future.status).toBe(400);
    expect((await future.json<Answer>()).error).toMatchObject({
      code: -32022,
      data: { supported: expect.arrayContaining([MODERN]), requested: "2030-01-01" },
    });
    expect(await modern(auth, "prompts/list")).toMatchObject({ status: 404, body: { error: { code: -32601 } } });
    expect((await modern(auth, "tools/call", { name: "nope", arguments: {} })).body.error.code).toBe(-32602);
  });

  it("refuses what is not one JSON-RPC message, in either era, and a client that cannot take JSON", async () => {
    const auth = bearer(await reader());
    const eras: Record<string, string>[] = [{}, { "mcp-protocol-version": MODERN }];
    for (const era of eras)
      for (const body of ["{", '{"jsonrpc":"2.0","id":1}', '{"jsonrpc":"2.0","id":1,"method":7}']) {
        const res = await SELF.fetch("https://lembas.test/mcp", {
          method: "POST",
          headers: { ...STREAMABLE, ...auth, ...era },
          body,
        });
        expect(res.status, body).toBe(400);
        expect((await res.json<Answer>()).error.code, body).toBeLessThan(-32000);
      }
    const noAccept = await SELF.fetch("https://lembas.test/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/html", ...auth },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(noAccept.status).toBe(406);
  });
});

describe("the library's tools", () => {
  it("add, list, search by meaning, read and delete, charged to the person's device", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId, "laptop", ["library"]);
    const auth = bearer(device.auth);
    const bread = await tool(auth, "library_add", {
      title: "Waybread",
      text: "Lembas is the waybread of the elves: one small cake keeps a traveller on their feet for a day.",
      source: "https://example.org/lembas",
    });
    expect(bread.isError).toBeUndefined();
    const boats = await tool(auth, "library_add", {
      title: "Swan ships",
      text: "The ships of the Teleri were built in the shape of swans, with beaks of gold and eyes of jet.",
    });
    const breadId = bread.structuredContent.document.id;
    const boatsId = boats.structuredContent.document.id;
    expect(JSON.parse(bread.content[0].text)).toEqual(bread.structuredContent);

    const listed = await tool(auth, "library_list", {});
    expect(listed.structuredContent.documents.map((d: { title: string }) => d.title).sort()).toEqual([
      "Swan ships",
      "Waybread",
    ]);

    const found = await tool(auth, "library_search", { query: "what cake do elves eat on a journey", limit: 2 });
    const results = found.structuredContent.results;
    expect(results.map((r: { document_id: string }) => r.document_id)).toEqual([breadId, boatsId]);
    expect(results[0]).toMatchObject({ title: "Waybread", source: "https://example.org/lembas", chunk: 0 });
    expect(results[0].score).toBeGreaterThan(results[1].score);
    const ships = await tool(auth, "library_search", { query: "ships shaped like swans" });
    expect(ships.structuredContent.results[0].document_id).toBe(boatsId);

    const read = await tool(auth, "library_get", { id: breadId });
    expect(read.structuredContent.document).toMatchObject({
      title: "Waybread",
      text: expect.stringMatching(/^Lembas/),
    });
    expect((await tool(auth, "library_delete", { id: breadId })).structuredContent).toEqual({ deleted: breadId });
    const after = await tool(auth, "library_search", { query: "what cake do elves eat on a journey" });
    expect(after.structuredContent.results.map((r: { document_id: string }) => r.document_id)).toEqual([boatsId]);
    const gone = await tool(auth, "library_get", { id: breadId });
    expect(gone).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/no document/) }] });

    // Every embedding was a metered request of the instance's embedding model, charged to this device.
    const rows = await usageRows(user.userId);
    expect(rows.length).toBe(5); // two documents, three searches
    expect(new Set(rows.map((r) => `${r.model} ${r.device_id}`))).toEqual(new Set([`fake/embed ${device.deviceId}`]));
    expect(rows.every((r) => r.tokens_in > 0 && r.cost_micro === r.tokens_in * 100)).toBe(true);
  });

  it("lists only the tools a token may call, in both eras, and its instructions say how to get the rest", async () => {
    const user = await createUser();
    const without = bearer((await createDevice(user.userId)).auth);
    const withIt = bearer((await createDevice(user.userId, "reader", ["library"])).auth);
    const names = (result: Answer) => result.tools.map((t: { name: string }) => t.name);
    const init = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } };

    expect(names((await legacy(without, "tools/list")).body!.result)).toEqual([]);
    expect(names((await modern(without, "tools/list")).body.result)).toEqual([]);
    for (const instructions of [
      (await legacy(without, "initialize", init)).body!.result.instructions,
      (await modern(without, "server/discover")).body.result.instructions,
    ]) {
      expect(instructions).toMatch(/^No tools are listed for this token\./);
      expect(instructions).toContain("library_search, library_add, library_list, library_get, library_delete need");
      expect(instructions).toContain("the library scope, which this token does not have");
      expect(instructions).toContain('PATCH /api/devices/<id> with {"scopes": ["library"]}');
    }

    expect(names((await legacy(withIt, "tools/list")).body!.result)).toHaveLength(5);
    expect(names((await modern(withIt, "tools/list")).body.result)).toHaveLength(5);
    const own = (await legacy(withIt, "initialize", init)).body!.result.instructions;
    expect(own).toMatch(/^The person's library of documents/);
    expect(own).not.toMatch(/scope/);
  });

  it("refuses a token without the library scope with a tool error that says how to get it", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    for (const name of ["library_list", "library_search", "library_add"]) {
      const result = await tool(bearer(device.auth), name, { query: "x", title: "x", text: "x" });
      expect(result.isError, name).toBe(true);
      expect(result.content[0].text).toMatch(/does not have the library scope/);
    }
    expect((await tool(bearer(user.apiAuth), "library_list", {})).isError).toBe(true);
    expect(await usageRows(user.userId)).toEqual([]);
  });

  it("keeps each person's library their own", async () => {
    const owner = await createUser();
    const other = await createUser();
    const mine = bearer((await createDevice(owner.userId, "a", ["library"])).auth);
    const theirs = bearer((await createDevice(other.userId, "b", ["library"])).auth);
    const added = await tool(mine, "library_add", { title: "Private", text: "my secret notes about lembas" });
    const id = added.structuredContent.document.id;
    expect((await tool(theirs, "library_list", {})).structuredContent.documents).toEqual([]);
    expect((await tool(theirs, "library_search", { query: "secret notes lembas" })).structuredContent.results).toEqual(
      [],
    );
    expect((await tool(theirs, "library_get", { id })).isError).toBe(true);
    expect((await tool(theirs, "library_delete", { id })).isError).toBe(true);
    expect((await tool(mine, "library_get", { id })).structuredContent.document.title).toBe("Private");
  });

  it("answers the web UI's signed-in person from the instance's own pages, and no other site", async () => {
    const user = await createUser();
    const message = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "library_list", arguments: {} } };
    const own = await call("POST", "/mcp", {
      body: message,
      headers: { accept: STREAMABLE.accept, cookie: user.cookie, origin: ORIGIN },
    });
    expect(own.status).toBe(200);
    expect((await jsonOf<Answer>(own)).result.structuredContent).toEqual({ documents: [] });
    const evil = await call("POST", "/mcp", {
      body: message,
      headers: { accept: STREAMABLE.accept, cookie: user.cookie, origin: "https://evil.example" },
    });
    expect(evil.status).toBe(403);
  });

  it("bounds what goes in: arguments checked, a text over 512 KiB refused, a full library refused", async () => {
    const user = await createUser();
    const auth = bearer((await createDevice(user.userId, "a", ["library"])).auth);
    const noTitle = await tool(auth, "library_add", { text: "x" });
    expect(noTitle).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/library_add.*title/) }] });
    const big = await tool(auth, "library_add", { title: "big", text: "word ".repeat(110_000) });
    expect(big).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/over 512 KiB/) }] });
    const many = await tool(auth, "library_search", { query: "x", limit: 21 });
    expect(many.isError).toBe(true);
    await env.DB.prepare(
      "INSERT INTO library_documents (id, user_id, title, text, chunks, model, created_at) VALUES (?, ?, 'huge', '', 20000, 'fake/embed', 0)",
    )
      .bind(crypto.randomUUID(), user.userId)
      .run();
    const full = await tool(auth, "library_add", { title: "one more", text: "a few words" });
    expect(full).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/has 20000 passages in its library, the most it may have/) }],
    });
    expect(await usageRows(user.userId)).toEqual([]);
  });

  it("lets only one of two documents added at once past the last place of the quota", async () => {
    const user = await createUser();
    const auth = bearer((await createDevice(user.userId, "a", ["library"])).auth);
    const filler = env.DB.prepare(
      "INSERT INTO library_documents (id, user_id, title, text, chunks, model, created_at) VALUES (?, ?, 'old', '', 1, 'fake/embed', 0)",
    );
    await env.DB.batch(Array.from({ length: 999 }, () => filler.bind(crypto.randomUUID(), user.userId)));
    const results = await Promise.all(
      ["first", "second"].map((title) => tool(auth, "library_add", { title, text: `the ${title} of two` })),
    );
    expect(results.filter((r) => !r.isError)).toHaveLength(1);
    expect(results.find((r) => r.isError).content[0].text).toMatch(/has 1000 documents in its library/);
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM library_documents WHERE user_id = ?")
      .bind(user.userId)
      .first<number>("n");
    expect(count).toBe(1000);
    // The refused one left no passage behind.
    const orphans = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM library_chunks c WHERE user_id = ? AND NOT EXISTS (SELECT 1 FROM library_documents d WHERE d.id = c.document_id)",
    )
      .bind(user.userId)
      .first<number>("n");
    expect(orphans).toBe(0);
  });
});

describe("tool definitions", () => {
  it("advertise as inputSchema exactly the JSON Schema of the arguments they check", () => {
    const strip = (schema: unknown): unknown =>
      JSON.parse(
        JSON.stringify(schema, (key, value) => (key === "description" || key === "$schema" ? undefined : value)),
      );
    for (const t of LIBRARY_TOOLS)
      expect(strip(t.inputSchema), t.name).toEqual(strip(z.toJSONSchema(t.input, { io: "input" })));
  });
});

describe("chunks", () => {
  it("cut long text at paragraph breaks, overlapping, and keep short text whole", () => {
    expect(splitText("  one short note  ")).toEqual(["one short note"]);
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i} ${"words ".repeat(20)}`.trim());
    const chunks = splitText(paragraphs.join("\n\n"));
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(1500);
    expect(chunks[0]).toMatch(/words$/); // cut at a paragraph's end, not mid-word
    for (const p of paragraphs) expect(chunks.some((c) => c.includes(p))).toBe(true);
  });
});
