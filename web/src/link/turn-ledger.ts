/**
 * The prompts this browser sent whose answers it has not seen, per device, so that after a reload (or a dropped
 * socket) the page can find out what became of each (the spec's reattach rules) and, if the device never got it,
 * send it again under the same turn id — whole. The list is in localStorage, with a small prompt's blocks; a larger
 * prompt's blocks (attachments run to tens of MB, past what localStorage holds) are kept in IndexedDB, and in memory
 * while this page lives. A prompt whose blocks could be kept nowhere (IndexedDB refused, the page closed before they
 * were written, or more large prompts waiting than are kept) has none to give (`blocks` answers null): it is never
 * sent again lessened.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { AttachmentInfo } from "../../../src/protocol/lembas";
import { blockBytes } from "../../../src/protocol/prompt-limits";
import { background } from "../app/background";

export interface KeptPrompt {
  sessionId: string;
  turnId: string;
  /** Inline for a small prompt; a large one's come from `TurnLedger.blocks`. */
  blocks?: acp.ContentBlock[];
  /** As the transcript shows it. */
  text: string;
  attachments: AttachmentInfo[];
}

/** A prompt of more bytes than this (decoded; a third more as base64) keeps its blocks out of localStorage. */
const INLINE_BELOW = 256 * 1024;
/** Old entries go first past this many (a page that never came back for them). */
const MAX_KEPT = 50;
/** Large prompts whose blocks are kept at once (at most 25 MB each): an older one's go first. */
const MAX_LARGE = 4;

const DATABASE = "lembas-prompts";
const STORE = "blocks";
type Key = [deviceId: string, turnId: string];

let database: Promise<IDBDatabase | null> | undefined;

/** The page's IndexedDB, or null where there is none (some private windows) or it fails to open. */
function openDatabase(): Promise<IDBDatabase | null> {
  database ??= new Promise((resolve) => {
    try {
      const request = indexedDB.open(DATABASE, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => resolve(null);
    } catch {
      resolve(null);
    }
  });
  return database;
}

/** One request in its own transaction: its result once the transaction completes, undefined if anything failed. */
async function inStore<T>(mode: IDBTransactionMode, request: (store: IDBObjectStore) => IDBRequest<T>) {
  const db = await openDatabase();
  if (!db) return undefined;
  return new Promise<T | undefined>((resolve) => {
    try {
      const tx = db.transaction(STORE, mode);
      const req = request(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = tx.onabort = () => resolve(undefined);
    } catch {
      resolve(undefined);
    }
  });
}

export class TurnLedger {
  private readonly key: string;
  /** Large prompts' blocks, by turn id, while this page lives (whatever IndexedDB did with them). */
  private readonly held = new Map<string, acp.ContentBlock[]>();
  /** Prompts this page added, in case localStorage refused them (full or off). */
  private readonly added = new Map<string, KeptPrompt>();

  constructor(private readonly deviceId: string) {
    this.key = `lembas.turns.${deviceId}`;
  }

  private all(): KeptPrompt[] {
    const listed = this.read();
    const ids = new Set(listed.map((p) => p.turnId));
    return [...listed, ...[...this.added.values()].filter((p) => !ids.has(p.turnId))];
  }

  /** The kept prompts, for the reattach rules; blocks kept for prompts no longer listed are dropped meanwhile. */
  pending(): KeptPrompt[] {
    background(this.sweep());
    return this.all();
  }

  /** A prompt's blocks as it was sent, or null when they could not be kept. */
  async blocks(prompt: KeptPrompt): Promise<acp.ContentBlock[] | null> {
    if (prompt.blocks) return prompt.blocks;
    const held = this.held.get(prompt.turnId);
    if (held) return held;
    const stored = await inStore<unknown>("readonly", (s) => s.get(this.keyOf(prompt.turnId)));
    return Array.isArray(stored) ? (stored as acp.ContentBlock[]) : null;
  }

  /** Keeps a prompt until its answer comes; resolves once its blocks are written where they can be. */
  async add(prompt: KeptPrompt): Promise<void> {
    const { blocks = [], ...rest } = prompt;
    const large = blocks.reduce((n, b) => n + blockBytes(b), 0) >= INLINE_BELOW;
    const entry: KeptPrompt = large ? rest : prompt;
    this.added.set(prompt.turnId, entry);
    for (const turnId of [...this.added.keys()].slice(0, -MAX_KEPT)) this.added.delete(turnId);
    const list = [...this.read().filter((p) => p.turnId !== prompt.turnId), entry].slice(-MAX_KEPT);
    this.write(list);
    if (!large) return;
    this.held.set(prompt.turnId, blocks);
    // The oldest large prompts give up their blocks past the bound.
    const largeIds = new Set([...list.filter((p) => !p.blocks).map((p) => p.turnId), ...this.held.keys()]);
    for (const turnId of [...largeIds].slice(0, -MAX_LARGE)) this.dropBlocks(turnId);
    await inStore("readwrite", (s) => s.put(blocks, this.keyOf(prompt.turnId)));
  }

  remove(turnId: string): void {
    const all = this.read();
    const gone = this.added.get(turnId) ?? all.find((p) => p.turnId === turnId);
    this.added.delete(turnId);
    if (gone && !gone.blocks) this.dropBlocks(turnId);
    const rest = all.filter((p) => p.turnId !== turnId);
    if (rest.length !== all.length) this.write(rest);
  }

  private keyOf(turnId: string): Key {
    return [this.deviceId, turnId];
  }

  private dropBlocks(turnId: string): void {
    this.held.delete(turnId);
    background(inStore("readwrite", (s) => s.delete(this.keyOf(turnId))));
  }

  /** Blocks kept for prompts no longer listed (answered in another tab, pushed out past MAX_KEPT) go. */
  private async sweep(): Promise<void> {
    const range = IDBKeyRange.bound([this.deviceId], [this.deviceId, []]);
    const keys = await inStore("readonly", (s) => s.getAllKeys(range));
    // Read after the keys: a prompt is listed before its blocks are written.
    const listed = new Set(this.all().map((p) => p.turnId));
    for (const key of keys ?? []) {
      const turnId = (key as Key)[1];
      if (!listed.has(turnId)) this.dropBlocks(turnId);
    }
  }

  private read(): KeptPrompt[] {
    try {
      const value: unknown = JSON.parse(localStorage.getItem(this.key) ?? "[]");
      return Array.isArray(value) ? (value as KeptPrompt[]) : [];
    } catch {
      return [];
    }
  }

  private write(list: KeptPrompt[]): void {
    try {
      if (list.length === 0) localStorage.removeItem(this.key);
      else localStorage.setItem(this.key, JSON.stringify(list));
    } catch {
      // Storage full or off: this page still has the prompt (`added`), a reload does not.
    }
  }
}
