/**
 * One turn folded into what a client needs to draw it again (KeptTurn), frame by frame, in memory: text and thought
 * chunks joined, each tool call as it last stood, the plan as it last stood, the engine events a person reads, the
 * cards with their decisions, then the prompt's answer. Pure: no storage here (kept.ts writes the finished record).
 *
 * Bounded as it grows: an image over `imageBytes` of base64 is kept as a placeholder, a text stops growing at
 * RECORD_BYTES, at most MAX_ITEMS items; `withinBytes` then cuts the finished record to RECORD_BYTES.
 */
import type { PromptParams } from "../../../protocol/acp";
import { base64Bytes, utf8Bytes } from "../../../protocol/prompt-limits";
import type { CardDecision, KeptAttachment, KeptItem, KeptTool, KeptTurn } from "../../../protocol/instance";
import { isRecord } from "../../../protocol/jsonrpc";

/** The most one kept turn may take (a storage value holds about 2 MB). */
export const RECORD_BYTES = 1024 * 1024;
/** Items a turn keeps; past it the rest is left out (and the record says it was cut). */
const MAX_ITEMS = 2000;
/** Engine events that only stream what session/update carries too, or that the record holds elsewhere. */
const NOT_KEPT_EVENTS = new Set(["text", "reasoning", "tool_call_delta", "progress", "task", "prompt", "step"]);

type Json = Record<string, unknown>;

/** An image block within the limit as it is; over it, its data dropped and its decoded size said. */
function keptBlock(block: Json, imageBytes: number): Json {
  if (block.type !== "image" || typeof block.data !== "string" || block.data.length <= imageBytes) return block;
  const { data, ...rest } = block;
  return { ...rest, size: base64Bytes(data), omitted: true };
}

/** What a person sent: the text blocks joined, and each attachment by name and size (an image's data kept). */
export function promptOf(blocks: PromptParams["prompt"], imageBytes: number): NonNullable<KeptTurn["prompt"]> {
  const texts: string[] = [];
  const attachments: KeptAttachment[] = [];
  for (const block of blocks) {
    if (block.type === "text") texts.push(block.text);
    else if (block.type === "resource_link") texts.push(`(see ${block.uri})`);
    else {
      const uri = block.type === "resource" ? block.resource.uri : (block as { uri?: string }).uri;
      const name = uri?.split("/").pop() || block.type;
      if (block.type === "image") {
        const size = base64Bytes(block.data);
        attachments.push({
          name,
          mimeType: block.mimeType,
          size,
          ...(block.data.length <= imageBytes ? { data: block.data } : {}),
        });
      } else if (block.type === "resource") {
        const r = block.resource as { mimeType?: string; text?: string; blob?: string };
        const size = r.text !== undefined ? utf8Bytes(r.text) : base64Bytes(r.blob ?? "");
        attachments.push({ name, mimeType: r.mimeType ?? "application/octet-stream", size });
      } else {
        attachments.push({ name, mimeType: block.mimeType, size: base64Bytes(block.data) });
      }
    }
  }
  return { text: texts.join("\n\n"), attachments };
}

export class TurnRecord {
  readonly turn: KeptTurn;
  #tools = new Map<string, KeptTool>();
  #cards = new Map<string, Extract<KeptItem, { type: "card" }>>();
  /** Units of text taken in so far, to stop a runaway stream from growing the record without end. */
  #units = 0;

  constructor(
    sessionId: string,
    turnId: string,
    prompt: KeptTurn["prompt"],
    private readonly imageBytes: number,
  ) {
    this.turn = {
      sessionId,
      turnId,
      startedAt: Date.now(),
      endedAt: 0,
      prompt,
      items: [],
      plan: null,
      stopReason: null,
      result: null,
    };
  }

  #push(item: KeptItem): void {
    if (this.turn.items.length >= MAX_ITEMS) this.turn.cut = true;
    else this.turn.items.push(item);
  }

  /** A chunk of text or thought: joined to the item before when that is of its kind, so the record reads in order. */
  #chunk(type: "text" | "thought", text: string): void {
    if (this.#units + text.length > RECORD_BYTES) {
      this.turn.cut = true;
      return;
    }
    this.#units += text.length;
    const last = this.turn.items.at(-1);
    if (last?.type === type) last.text += text;
    else this.#push({ type, text });
  }

  /** A session/update's `update`. */
  update(update: Json): void {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
      case "agent_thought_chunk": {
        const content = update.content;
        if (!isRecord(content)) return;
        const type = update.sessionUpdate === "agent_message_chunk" ? "text" : "thought";
        if (content.type === "text" && typeof content.text === "string") this.#chunk(type, content.text);
        else if (type === "text") this.#push({ type: "block", block: keptBlock(content, this.imageBytes) });
        return;
      }
      case "tool_call":
      case "tool_call_update": {
        if (typeof update.toolCallId !== "string") return;
        const { sessionUpdate: _kind, _meta, ...fields } = update;
        let tool = this.#tools.get(update.toolCallId);
        if (!tool) {
          tool = { toolCallId: update.toolCallId };
          this.#tools.set(update.toolCallId, tool);
          this.#push({ type: "tool", tool });
        }
        // Fields a frame leaves out stay as they were; content and locations come whole each time.
        for (const [key, value] of Object.entries(fields))
          if (value !== undefined && value !== null) (tool as unknown as Json)[key] = value;
        if (Array.isArray(tool.content))
          tool.content = tool.content.map((c) =>
            isRecord(c) && c.type === "content" && isRecord(c.content)
              ? { ...c, content: keptBlock(c.content, this.imageBytes) }
              : c,
          );
        return;
      }
      case "plan":
        if (!Array.isArray(update.entries)) return;
        this.turn.plan = update.entries;
        // The plan shows where it first appeared, as it last stood.
        if (!this.turn.items.some((i) => i.type === "plan")) this.#push({ type: "plan", entries: update.entries });
        else for (const item of this.turn.items) if (item.type === "plan") item.entries = update.entries;
        return;
      case "current_mode_update":
        if (typeof update.currentModeId === "string") this.#push({ type: "mode", modeId: update.currentModeId });
        return;
      default:
        return;
    }
  }

  /** A `_lembas/event`'s event: the prompt's text as the person saw it, and the events a person reads. */
  event(event: Json): void {
    if (typeof event.type !== "string") return;
    if (event.type === "prompt" && typeof event.text === "string") {
      const attachments = Array.isArray(event.attachments) ? (event.attachments as KeptAttachment[]) : [];
      // What was sent through the instance keeps its images' data; the device's names are what it showed.
      this.turn.prompt = {
        text: event.text,
        attachments: this.turn.prompt?.attachments.length ? this.turn.prompt.attachments : attachments,
      };
      return;
    }
    if (NOT_KEPT_EVENTS.has(event.type)) return;
    this.#push({ type: "event", event: event as KeptItem extends { event: infer E } ? E : never });
  }

  cardOpened(method: string, toolCallId: string, params: unknown): void {
    const item = { type: "card" as const, method, toolCallId, params, decision: null };
    this.#cards.set(toolCallId, item);
    this.#push(item);
  }

  cardDecided(toolCallId: string, decision: CardDecision): boolean {
    const card = this.#cards.get(toolCallId);
    if (!card) return false;
    card.decision = decision;
    return true;
  }

  /** The turn ended: with the prompt's answer when there is one (stopReason, `_meta.lembas`). */
  finish(result: unknown): KeptTurn {
    this.turn.endedAt = Date.now();
    if (isRecord(result)) {
      if (typeof result.stopReason === "string") this.turn.stopReason = result.stopReason;
      const meta = isRecord(result._meta) && isRecord(result._meta.lembas) ? result._meta.lembas : null;
      if (meta) {
        const { turnId: _id, ...fields } = meta;
        this.turn.result = Object.keys(fields).length > 0 ? fields : null;
      }
    }
    return withinBytes(this.turn, RECORD_BYTES);
  }
}

/**
 * The record within `max` bytes of JSON: images' data dropped first, then the longest texts halved (marked cut)
 * until it fits.
 */
export function withinBytes(turn: KeptTurn, max: number): KeptTurn {
  let text = JSON.stringify(turn);
  if (utf8Bytes(text) <= max) return turn;
  let record = JSON.parse(text) as KeptTurn;
  record.cut = true;
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (!isRecord(v)) return v;
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === "data" && typeof x === "string") {
        out.omitted = true;
        continue;
      }
      out[k] = strip(x);
    }
    return out;
  };
  record = strip(record) as KeptTurn;
  text = JSON.stringify(record);
  while (utf8Bytes(text) > max) {
    // The longest string anywhere in the record, halved.
    let longest: { holder: Json | unknown[]; key: string | number; length: number } | null = null;
    const visit = (holder: Json | unknown[]) => {
      for (const [key, x] of Object.entries(holder)) {
        const k = Array.isArray(holder) ? Number(key) : key;
        if (typeof x === "string") {
          if (!longest || x.length > longest.length) longest = { holder, key: k, length: x.length };
        } else if (isRecord(x) || Array.isArray(x)) visit(x);
      }
    };
    visit(record as unknown as Json);
    const found = longest as { holder: Json | unknown[]; key: string | number; length: number } | null;
    if (!found || found.length < 64) break;
    const value = (found.holder as Record<string | number, string>)[found.key]!;
    (found.holder as Record<string | number, string>)[found.key] =
      `${value.slice(0, Math.floor(value.length / 2))} …(cut)`;
    text = JSON.stringify(record);
  }
  return record;
}
