/**
 * The kept turns in the object's key-value storage: `kept/t/<n>` a finished turn (KeptTurn), `n` counting up across
 * the device so keys list oldest first, and `kept/c/<sessionId>` a chat's index — its turns' numbers, sizes and ids,
 * and its last message. The indexes are listed once per object instance and then kept in memory; records are read
 * only to serve them.
 *
 * Every write is made with `allowUnconfirmed`, in an event of its own (kept.ts): it holds no frame back. The failure
 * accepted is a turn lost with its host within the commit's replication time — the device's history still has it.
 *
 * Bounds (limits/config.ts): a chat keeps its last `kept_turns` turns within `kept_chat_bytes`, the device all its
 * chats' within `kept_device_bytes`; past any, the oldest go first.
 */
import { utf8Bytes } from "../../../protocol/prompt-limits";
import type { KeptChatsResult, KeptTurn, KeptTurnsResult } from "../../../protocol/instance";
import { logged, UNCONFIRMED } from "../../runtime/unconfirmed";
import { perObject } from "../../runtime/per-object";

const TURN = "kept/t/";
const CHAT = "kept/c/";
/** Zero-padded, so that keys list in write order. */
const turnKey = (n: number) => `${TURN}${String(n).padStart(12, "0")}`;
/** The most one page of `_instance/kept/turns` carries (at least one turn, whatever its size). */
export const PAGE_BYTES = 4 * 1024 * 1024;
/** A chat's last message, as the chat list shows it, cut to this many characters. */
const LAST_TEXT_CHARS = 200;

interface IndexedTurn {
  n: number;
  bytes: number;
  turnId: string;
}

interface ChatIndex {
  turns: IndexedTurn[];
  lastText: string;
  lastAt: number;
}

export interface KeptBounds {
  turns: number;
  chatBytes: number;
  deviceBytes: number;
}

/** The text a chat list shows for a turn: its agent's last message, else what the person sent. */
function lastTextOf(turn: KeptTurn): string {
  const text = turn.items.findLast((i) => i.type === "text")?.text ?? turn.prompt?.text ?? "";
  const line = text.trim().replace(/\s+/g, " ");
  return line.length > LAST_TEXT_CHARS ? `${line.slice(0, LAST_TEXT_CHARS - 1)}…` : line;
}

export class KeptStore {
  #chats: Map<string, ChatIndex> | null = null;
  #last = 0;

  constructor(private readonly storage: DurableObjectStorage) {}

  #all(): Map<string, ChatIndex> {
    if (this.#chats === null) {
      this.#chats = new Map();
      for (const [key, index] of this.storage.kv.list<ChatIndex>({ prefix: CHAT })) {
        this.#chats.set(key.slice(CHAT.length), index);
        for (const t of index.turns) this.#last = Math.max(this.#last, t.n);
      }
    }
    return this.#chats;
  }

  /** Keeps a finished turn, then drops the oldest past the bounds. */
  add(turn: KeptTurn, bounds: KeptBounds): void {
    const chats = this.#all();
    const text = JSON.stringify(turn);
    this.#last += 1;
    const n = this.#last;
    this.#put(turnKey(n), text);
    const chat = chats.get(turn.sessionId) ?? { turns: [], lastText: "", lastAt: 0 };
    chats.set(turn.sessionId, chat);
    chat.turns.push({ n, bytes: utf8Bytes(text), turnId: turn.turnId });
    chat.lastText = lastTextOf(turn);
    chat.lastAt = turn.endedAt;
    const changed = new Set([turn.sessionId]);
    const bytesOf = (c: ChatIndex) => c.turns.reduce((sum, t) => sum + t.bytes, 0);
    while (chat.turns.length > bounds.turns || (chat.turns.length > 0 && bytesOf(chat) > bounds.chatBytes)) {
      this.#delete(turnKey(chat.turns.shift()!.n));
    }
    let total = [...chats.values()].reduce((sum, c) => sum + bytesOf(c), 0);
    while (total > bounds.deviceBytes) {
      // The oldest turn of any chat.
      let oldest: [string, ChatIndex] | null = null;
      for (const entry of chats)
        if (entry[1].turns.length > 0 && (!oldest || entry[1].turns[0]!.n < oldest[1].turns[0]!.n)) oldest = entry;
      if (!oldest) break;
      const gone = oldest[1].turns.shift()!;
      this.#delete(turnKey(gone.n));
      total -= gone.bytes;
      changed.add(oldest[0]);
    }
    for (const sessionId of changed) {
      const index = chats.get(sessionId)!;
      if (index.turns.length > 0) this.#put(CHAT + sessionId, index);
      else {
        chats.delete(sessionId);
        this.#delete(CHAT + sessionId);
      }
    }
  }

  /** A page of a chat's kept turns, newest first, older than turn number `before`. */
  page(sessionId: string, before: number | undefined, limit: number): KeptTurnsResult {
    const older = (this.#all().get(sessionId)?.turns ?? []).filter((t) => before === undefined || t.n < before);
    const turns: KeptTurn[] = [];
    let bytes = 0;
    let i = older.length - 1;
    for (; i >= 0 && turns.length < limit; i--) {
      const t = older[i]!;
      if (turns.length > 0 && bytes + t.bytes > PAGE_BYTES) break;
      const text = this.storage.kv.get<string>(turnKey(t.n));
      if (text === undefined) continue;
      turns.push(JSON.parse(text) as KeptTurn);
      bytes += t.bytes;
    }
    return { sessionId, turns, next: i >= 0 ? older[i + 1]!.n : null };
  }

  chats(): KeptChatsResult {
    return {
      chats: [...this.#all()].map(([sessionId, c]) => ({
        sessionId,
        turns: c.turns.length,
        bytes: c.turns.reduce((sum, t) => sum + t.bytes, 0),
        lastText: c.lastText,
        lastAt: c.lastAt,
      })),
    };
  }

  /** A chat's kept turns go (it was deleted). */
  forget(sessionId: string): void {
    const chat = this.#all().get(sessionId);
    if (!chat) return;
    this.#chats!.delete(sessionId);
    for (const t of chat.turns) this.#delete(turnKey(t.n));
    this.#delete(CHAT + sessionId);
  }

  /** Every kept turn goes (the device or its account was deleted). */
  forgetAll(): void {
    for (const sessionId of [...this.#all().keys()]) this.forget(sessionId);
    // Records no index names (a write lost half-way) go too.
    for (const [key] of this.storage.kv.list({ prefix: TURN })) this.#delete(key);
  }

  #put(key: string, value: unknown): void {
    this.storage.put(key, value, UNCONFIRMED).catch(logged("keeping a turn"));
  }

  #delete(key: string): void {
    this.storage.delete(key, UNCONFIRMED).catch(logged("dropping a kept turn"));
  }
}

/** Each object instance's store, by its storage. */
export const keptOf = perObject((storage: DurableObjectStorage) => new KeptStore(storage));
