import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { HttpError } from "../../src/respond";
import { DEFAULT_LINK_CAPS, limitsOf } from "../../src/limits/config";
import type { TestUser } from "../helpers/fixtures";
import { attachClient, linkStub, type Peer, type Wire } from "../helpers/link";
import { linkedWithClients, statusOf } from "../helpers/linked";

const { open_cards, open_card_bytes, running_turns } = DEFAULT_LINK_CAPS;
const LIMIT_REACHED = -32006;

const plan = (toolCallId: string, text = "# Plan\n1. build", sessionId = "ses_1") => ({
  sessionId,
  toolCallId,
  path: "PLAN.md",
  text,
});
const task = (state: string, turnId: string, sessionId: string) => ({
  jsonrpc: "2.0",
  method: "_lembas/event",
  params: { sessionId, event: { type: "task", state, turnId } },
});
const update = (text: string, sessionId: string) => ({
  jsonrpc: "2.0",
  method: "session/update",
  params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
});
const prompt = (sessionId: string) => ({ sessionId, prompt: [{ type: "text", text: "go" }] });

/** The device asks for a plan card for each id in turn (request ids from `firstId`). */
function askPlans(link: Peer, ids: string[], firstId: number, text?: string): void {
  ids.forEach((toolCallId, i) => {
    link.send({ jsonrpc: "2.0", id: firstId + i, method: "_lembas/plan", params: plan(toolCallId, text) });
  });
}

/** `count` messages a peer receives. */
async function take(peer: Peer, count: number): Promise<Wire[]> {
  const seen: Wire[] = [];
  while (seen.length < count) seen.push(await peer.next());
  return seen;
}

/**
 * Everything a socket attaching now is sent before what it asks first: the frames before the answer to its first
 * request (catch-up is sent while it attaches, before any frame of its own is read).
 */
async function catchUpOf(user: TestUser, deviceId: string): Promise<Wire[]> {
  const late = await attachClient(user, deviceId);
  late.send({ jsonrpc: "2.0", id: "after-catch-up", method: "_instance/status" });
  const seen: Wire[] = [];
  for (let message = await late.next(); message.id !== "after-catch-up"; message = await late.next()) {
    seen.push(message);
  }
  late.close();
  return seen;
}

describe("a device's open cards are capped", () => {
  it(`at ${open_cards}: past them the device's request is refused -32006 { cap, limit } and no client sees it`, async () => {
    const { link, clients } = await linkedWithClients(1);
    const [browser] = clients as [Peer];
    const ids = Array.from({ length: open_cards + 5 }, (_, i) => `call_${i}`);
    askPlans(link, ids, 1000);
    const refusals = await take(link, 5);
    expect(refusals.map((r) => r.id)).toEqual([
      1000 + open_cards,
      1001 + open_cards,
      1002 + open_cards,
      1003 + open_cards,
      1004 + open_cards,
    ]);
    for (const refusal of refusals) {
      expect(refusal.error).toMatchObject({ code: LIMIT_REACHED, data: { cap: "open_cards", limit: open_cards } });
      expect(refusal.error!.message).toContain(`the most it may have (${open_cards})`);
    }
    const shown = await take(browser, open_cards);
    expect(shown.map((card) => card.id)).toEqual(ids.slice(0, open_cards).map((id) => `card:ses_1/${id}`));
    await browser.silent();
    expect((await statusOf(browser)).cards).toHaveLength(open_cards);

    // Answering one makes room for exactly one more.
    browser.send({ jsonrpc: "2.0", id: "card:ses_1/call_0", result: { outcome: "dismissed" } });
    expect(await link.next()).toEqual({ jsonrpc: "2.0", id: 1000, result: { outcome: "dismissed" } });
    expect(await browser.next()).toMatchObject({ method: "_instance/card/decided", params: { toolCallId: "call_0" } });
    askPlans(link, ["call_again", "call_over"], 2000);
    expect(await link.next()).toMatchObject({ id: 2001, error: { code: LIMIT_REACHED, data: { cap: "open_cards" } } });
    expect(await browser.next()).toMatchObject({ id: "card:ses_1/call_again" });
  });

  it(`past ${open_card_bytes} bytes of params together, later cards are shown cut to an even share — never refused`, async () => {
    const { link, clients } = await linkedWithClients(1);
    const [browser] = clients as [Peer];
    // Plans of 600 KiB each (the finding: thousands of 5 KB cards sent to every socket that attaches).
    const text = "x".repeat(600 * 1024);
    const fits = Math.floor(open_card_bytes / JSON.stringify(plan("call_00", text)).length);
    const ids = Array.from({ length: fits + 2 }, (_, i) => `call_${String(i).padStart(2, "0")}`);
    askPlans(link, ids, 0, text);
    const shown = await take(browser, fits + 2);
    expect(shown.map((card) => card.id)).toEqual(ids.map((id) => `card:ses_1/${id}`));
    for (const card of shown.slice(0, fits)) expect(card.params).toEqual(plan(card.params?.toolCallId as string, text));
    const size = (card: Wire) => JSON.stringify(card.params).length;
    const [filling, past] = shown.slice(fits) as [Wire, Wire];
    for (const card of [filling, past]) {
      expect(text.startsWith(card.params?.text as string)).toBe(true);
      expect(card.params?._meta).toMatchObject({ instance: { cut: { strings: 1 } } });
    }
    // The first cut card takes what is left of the bytes; any after it an even share of them.
    expect(shown.slice(0, fits + 1).reduce((sum, card) => sum + size(card), 0)).toBeLessThanOrEqual(open_card_bytes);
    expect(size(past)).toBeLessThanOrEqual(open_card_bytes / open_cards);
    // Nothing was refused to the device.
    await link.silent();
  });
});

describe("a link's running turns are capped", () => {
  it(`at ${running_turns}: a prompt past them is refused -32006 { cap, limit } and never reaches the device`, async () => {
    const { link, clients } = await linkedWithClients(1);
    const [browser] = clients as [Peer];
    for (let i = 0; i < running_turns; i++) {
      browser.send({ jsonrpc: "2.0", id: `p${i}`, method: "session/prompt", params: prompt(`ses_${i}`) });
    }
    const sent = await take(link, running_turns);
    browser.send({ jsonrpc: "2.0", id: "p-over", method: "session/prompt", params: prompt("ses_over") });
    const refused = await browser.answer("p-over");
    expect(refused.error).toMatchObject({
      code: LIMIT_REACHED,
      data: { cap: "running_turns", limit: running_turns },
    });
    expect(refused.error!.message).toContain(`the most it may have (${running_turns})`);
    await link.silent();
    expect((await statusOf(browser)).turns).toHaveLength(running_turns);

    // A turn ends: the next prompt goes through.
    link.send({ jsonrpc: "2.0", id: sent[0]!.id, result: { stopReason: "end_turn" } });
    expect(await browser.answer("p0")).toMatchObject({ result: { stopReason: "end_turn" } });
    browser.send({ jsonrpc: "2.0", id: "p-next", method: "session/prompt", params: prompt("ses_next") });
    expect(await link.next()).toMatchObject({ method: "session/prompt", params: { sessionId: "ses_next" } });
  });

  it("keeps _instance/status and a late joiner's catch-up bounded by the caps, however many cards and turns a device starts", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [browser] = clients as [Peer];
    // Turns typed at a terminal (task start events) in twice as many sessions as the cap, each with an update.
    const sessions = Array.from({ length: running_turns * 2 }, (_, i) => `ses_t${i}`);
    const frames = sessions.flatMap((s) => [task("start", `turn-${s}`, s), update(`working in ${s}`, s)]);
    for (const frame of frames) link.send(frame);
    await take(browser, frames.length);
    // And cards past their cap.
    askPlans(
      link,
      Array.from({ length: open_cards * 2 }, (_, i) => `call_${i}`),
      0,
    );
    await take(link, open_cards);
    await take(browser, open_cards);

    const status = await statusOf(browser);
    expect(status.cards).toHaveLength(open_cards);
    expect((status.turns as { sessionId: string }[]).map((t) => t.sessionId)).toEqual(sessions.slice(0, running_turns));

    const catchUp = await catchUpOf(user, device.deviceId);
    const replays = catchUp.filter((m) => m.method === "_instance/replay");
    expect(replays.map((m) => (m.params as { sessionId: string }).sessionId).sort()).toEqual(
      sessions.slice(0, running_turns).sort(),
    );
    expect(catchUp.filter((m) => m.method === "_lembas/plan")).toHaveLength(open_cards);
    // Per running turn: its replay notice, its task start and its update; then the open cards.
    expect(catchUp).toHaveLength(running_turns * 3 + open_cards);
  });
});

describe("changing the caps", () => {
  it("LINK_CAPS names only what it changes, and the device's object goes by it; a mistake is named", async () => {
    const { device, link, clients } = await linkedWithClients(1);
    const [browser] = clients as [Peer];
    await runInDurableObject(linkStub(device.deviceId), (instance) => {
      (instance as unknown as { env: Env }).env.LINK_CAPS = '{"open_cards":2}';
    });
    askPlans(link, ["call_a", "call_b", "call_c"], 0);
    expect(await link.next()).toMatchObject({
      id: 2,
      error: { code: LIMIT_REACHED, data: { cap: "open_cards", limit: 2 } },
    });
    expect((await take(browser, 2)).map((card) => card.id)).toEqual(["card:ses_1/call_a", "card:ses_1/call_b"]);

    expect(limitsOf({ ...env, LINK_CAPS: { running_turns: 4 } }).caps).toEqual({
      ...DEFAULT_LINK_CAPS,
      running_turns: 4,
    });
    for (const bad of [{ open_card: 1 }, { running_turns: -1 }, "{not json"]) {
      expect(() => limitsOf({ ...env, LINK_CAPS: bad })).toThrow(HttpError);
    }
  });
});
