import { describe, expect, it } from "vitest";
import { InitializeResult, PromptParams, PromptResult, SessionUpdateParams } from "../../src/protocol/acp";
import { PROMPT_LIMITS } from "../../src/protocol/prompt-limits";
import {
  EventParams,
  FilesSearchParams,
  Hello,
  SessionTitleParams,
  TerminalOpenParams,
  TerminalInputParams,
} from "../../src/protocol/lembas";
import { CLIENT_TO_AGENT, isClientToAgentMethod } from "../../src/protocol/methods";
import { check } from "../../src/protocol/issues";

const png = btoa("\x89PNG\r\n\x1a\n");

describe("session/prompt params", () => {
  it("accept every block kind and the turnId", () => {
    const params = {
      sessionId: "ses_1",
      prompt: [
        { type: "text", text: "look at this" },
        { type: "resource_link", uri: "file:///home/me/a.md" },
        { type: "image", data: png, mimeType: "image/png" },
        { type: "resource", resource: { uri: "notes.txt", mimeType: "text/plain", text: "hello" } },
        { type: "resource", resource: { uri: "data.bin", blob: btoa("\x00\x01") } },
      ],
      _meta: { lembas: { turnId: "msg_42" } },
    };
    const r = check(PromptParams, params);
    expect(r.ok && r.value._meta?.lembas?.turnId).toBe("msg_42");
  });

  it("keep fields it does not know", () => {
    const r = check(PromptParams, {
      sessionId: "s",
      prompt: [{ type: "text", text: "hi", annotations: { audience: ["user"] } }],
      extra: 1,
    });
    expect(r).toMatchObject({ ok: true, value: { extra: 1, prompt: [{ annotations: { audience: ["user"] } }] } });
  });

  it("refuse an empty prompt, an unknown block, a bad image type, non-base64 data, a resource with neither text nor blob", () => {
    expect(check(PromptParams, { sessionId: "s", prompt: [] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("at least one block"),
    });
    expect(check(PromptParams, { sessionId: "s", prompt: [{ type: "video", data: png }] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("prompt.0.type"),
    });
    expect(
      check(PromptParams, { sessionId: "s", prompt: [{ type: "image", data: png, mimeType: "image/bmp" }] }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("prompt.0.mimeType") });
    expect(
      check(PromptParams, { sessionId: "s", prompt: [{ type: "image", data: "not base64!", mimeType: "image/png" }] }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("base64") });
    expect(
      check(PromptParams, { sessionId: "s", prompt: [{ type: "resource", resource: { uri: "x" } }] }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("either text or a base64 blob") });
    expect(check(PromptParams, { prompt: [{ type: "text", text: "hi" }] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("sessionId"),
    });
  });

  it("refuse a block over 10 MB decoded, with a sentence", () => {
    const big = "A".repeat(Math.ceil(((PROMPT_LIMITS.blockBytes + 3) * 4) / 3 / 4) * 4);
    const r = check(PromptParams, {
      sessionId: "s",
      prompt: [{ type: "resource", resource: { uri: "big.bin", blob: big } }],
    });
    expect(r).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^prompt\.0: a block may be at most 10,000,000 bytes decoded/),
    });
  });
});

describe("the device's hello and initialize result", () => {
  it("read the spec's initialize result", () => {
    const example = {
      protocolVersion: 1,
      agentCapabilities: {
        loadSession: false,
        promptCapabilities: { image: true, audio: false, embeddedContext: true },
        mcpCapabilities: { http: false, sse: false },
      },
      authMethods: [],
      agentInfo: { name: "LLeMbas CLI", version: "1.0.0" },
      _meta: {
        lembas: {
          protocol: 2,
          harness_spec: "1.0.0",
          limits: { roots: ["~/work"], max_mode: "edit" },
          connection: "example",
          capabilities: ["directories", "configure", "…"],
        },
      },
    };
    const r = check(InitializeResult, example);
    expect(r).toMatchObject({
      ok: true,
      value: {
        _meta: { lembas: { protocol: 2, connection: "example", capabilities: ["directories", "configure", "…"] } },
      },
    });
  });

  it("read a plain ACP agent's result, which says nothing of lembas", () => {
    expect(check(InitializeResult, { protocolVersion: 1, agentCapabilities: { loadSession: true } })).toMatchObject({
      ok: true,
    });
  });

  it("read a lembas meta leniently: true or no protocol is protocol 1, capabilities that are not strings are left out", () => {
    const lembasOf = (lembas: unknown) => {
      const read = check(InitializeResult, { protocolVersion: 1, _meta: { lembas } });
      if (!read.ok) throw new Error(read.error);
      return read.value._meta?.lembas;
    };
    expect(lembasOf(true)).toEqual({ protocol: 1, capabilities: [] });
    expect(lembasOf({ capabilities: ["files"] })).toMatchObject({ protocol: 1, capabilities: ["files"] });
    expect(lembasOf({ protocol: 2, capabilities: [1, "turns"], limits: { roots: 7 } })).toMatchObject({
      protocol: 2,
      capabilities: ["turns"],
      limits: {},
    });
    expect(check(InitializeResult, { protocolVersion: 1, _meta: { lembas: { protocol: "two" } } })).toMatchObject({
      ok: false,
      error: expect.stringContaining("_meta.lembas.protocol"),
    });
  });

  it("read the spec's hello leniently: a protocol said as a string, no device; refuse an unreadable protocol", () => {
    const hello = {
      protocol: 2,
      version: "1.4.0",
      harness_spec: "1.0.0",
      device: { host: "laptop", platform: "linux" },
      limits: { roots: ["~/work"], max_mode: "edit", require_trust: true },
    };
    expect(check(Hello, hello)).toEqual({ ok: true, value: hello });
    expect(check(Hello, { ...hello, protocol: "2" })).toMatchObject({ ok: true, value: { protocol: 2 } });
    expect(check(Hello, { protocol: 2, limits: null })).toMatchObject({ ok: true, value: { protocol: 2 } });
    expect(check(Hello, { ...hello, protocol: "two" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("protocol"),
    });
    // A device that follows no harness spec and sets no mode ceiling says so with null; it links all the same.
    const plain = { ...hello, harness_spec: null, limits: { roots: ["/home/ada"], max_mode: null } };
    expect(check(Hello, plain)).toEqual({ ok: true, value: plain });
  });
});

describe("other messages", () => {
  it("check the session/update kinds the spec names and pass others through", () => {
    expect(
      check(SessionUpdateParams, {
        sessionId: "s",
        update: { sessionUpdate: "current_mode_update", currentModeId: "plan" },
      }),
    ).toMatchObject({ ok: true });
    expect(
      check(SessionUpdateParams, { sessionId: "s", update: { sessionUpdate: "usage_update", used: 3 } }),
    ).toMatchObject({ ok: true, value: { update: { used: 3 } } });
    expect(
      check(SessionUpdateParams, { sessionId: "s", update: { sessionUpdate: "tool_call", title: "x" } }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("update.toolCallId") });
  });

  it("check the events the spec relies on and pass the others through", () => {
    expect(
      check(EventParams, { sessionId: "s", event: { type: "title", id: "s", title: "Fix the build" } }),
    ).toMatchObject({ ok: true });
    expect(check(EventParams, { sessionId: "s", event: { type: "usage", tokens: 10 } })).toMatchObject({ ok: true });
    expect(check(EventParams, { sessionId: "s", event: { type: "task", state: "paused", turnId: "t" } })).toMatchObject(
      { ok: false, error: expect.stringContaining("event.state") },
    );
    expect(
      check(EventParams, {
        sessionId: "s",
        event: { type: "model", ref: "deepseek/flash", effort: "off", connection: "me" },
      }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("event.instance") });
  });

  it("read a prompt's answer with its lembas fields, and refuse an unknown stop reason", () => {
    expect(
      check(PromptResult, { stopReason: "end_turn", _meta: { lembas: { turnId: "t1", unsent: ["also this"] } } }),
    ).toMatchObject({ ok: true });
    expect(check(PromptResult, { stopReason: "bored" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("stopReason"),
    });
  });

  it("hold the spec's bounds on titles, file searches and terminals", () => {
    expect(check(SessionTitleParams, { sessionId: "s", title: "t".repeat(200) })).toMatchObject({ ok: true });
    expect(check(SessionTitleParams, { sessionId: "s", title: "t".repeat(201) })).toMatchObject({
      ok: false,
      error: "title: a title is at most 200 characters",
    });
    expect(check(FilesSearchParams, { sessionId: "s", query: "", limit: 50 })).toMatchObject({ ok: true });
    expect(check(FilesSearchParams, { sessionId: "s", query: "", limit: 51 })).toMatchObject({
      ok: false,
      error: "limit: limit is at most 50",
    });
    expect(check(FilesSearchParams, { query: "a" })).toMatchObject({
      ok: false,
      error: "give exactly one of sessionId or cwd",
    });
    expect(check(TerminalOpenParams, { cols: 500, rows: 5 })).toMatchObject({ ok: true });
    expect(check(TerminalOpenParams, { cols: 19 })).toMatchObject({ ok: false, error: "cols: at least 20 columns" });
    expect(check(TerminalOpenParams, { rows: 301 })).toMatchObject({ ok: false, error: "rows: at most 300 rows" });
    expect(check(TerminalInputParams, { terminalId: "t", data: "bHM=" })).toMatchObject({ ok: true });
    expect(check(TerminalInputParams, { terminalId: "t", data: "ls\n" })).toMatchObject({ ok: false });
  });

  it("look a client method's params up by name", () => {
    expect(isClientToAgentMethod("_lembas/steer")).toBe(true);
    expect(isClientToAgentMethod("initialize")).toBe(false);
    expect(isClientToAgentMethod("toString")).toBe(false);
    expect(CLIENT_TO_AGENT["session/cancel"].notification).toBe(true);
    // An empty steer text is the device's to judge; a steer without its session is not a steer.
    expect(CLIENT_TO_AGENT["_lembas/steer"].params.safeParse({ sessionId: "s", text: "" }).success).toBe(true);
    expect(CLIENT_TO_AGENT["_lembas/steer"].params.safeParse({ text: "x" }).success).toBe(false);
  });
});
