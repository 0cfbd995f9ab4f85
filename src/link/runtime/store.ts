/**
 * The link's state in the object's SQLite: the current (or last) link — its handshake progress, hello and
 * initialize result — and a few facts about the object (which device it is, its owner, the request ids reserved).
 * The handshake lives here, not in memory, so it completes even if the object is evicted halfway. The tables are
 * core's (core.ts).
 */
import type { Hello } from "../../protocol/lembas";
import type { InitializeResult } from "../../protocol/acp";

/** hello: waiting for `_lembas/hello`; initialize: waiting for the answer to initialize; up; down. */
export type LinkState = "hello" | "initialize" | "up" | "down";

export interface LinkRecord {
  linkId: string;
  state: LinkState;
  /** The protocol the link speaks: hello's, then initialize's `_meta.lembas.protocol` where it says one. */
  protocol: number | null;
  hello: Hello | null;
  initialize: InitializeResult | null;
  connectedAt: number;
  upAt: number | null;
  downAt: number | null;
}

interface LinkRow extends Record<string, SqlStorageValue> {
  link_id: string;
  state: string;
  protocol: number | null;
  hello: string | null;
  initialize: string | null;
  connected_at: number;
  up_at: number | null;
  down_at: number | null;
}

/** Request ids reserved per counter write. */
const ID_BLOCK = 1000;

/** What an update may change. */
export type LinkChange = Partial<Omit<LinkRecord, "linkId" | "connectedAt">>;

const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** The change without its undefined members (which change nothing). */
const defined = (change: LinkChange): LinkChange =>
  Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));

/**
 * Reads go through a cached copy (the link, the meta values); every write goes through here and changes the copy
 * with the row, so the cache is never stale — except after a transaction rolled back, whose caller calls forget().
 */
export class LinkStore {
  #cached: LinkRecord | null | undefined;
  /**
   * Changes of the current link kept in memory only (hold): the row is read with them laid over it, and the next
   * update of the link writes them with its own. The caller keeps them durable its own way (handshake.ts).
   */
  #unwritten: { linkId: string; change: LinkChange } | null = null;
  readonly #meta = new Map<string, string>();
  #metaRead = false;
  /** The last request id handed out, and the highest one reserved in storage. */
  #nextId = 0;
  #reservedTo = 0;
  #blockSaved = true;

  /** `empty`: the tables were made just now, so there is nothing to read. */
  constructor(
    private readonly sql: SqlStorage,
    empty = false,
  ) {
    if (empty) {
      this.#cached = null;
      this.#metaRead = true;
    }
  }

  current(): LinkRecord | null {
    if (this.#cached !== undefined) return this.#cached;
    const row = this.sql.exec<LinkRow>("SELECT * FROM link WHERE one=1").toArray()[0];
    const stored: LinkRecord | null = row
      ? {
          linkId: row.link_id,
          state: row.state as LinkState,
          protocol: row.protocol,
          hello: parse<Hello>(row.hello),
          initialize: parse<InitializeResult>(row.initialize),
          connectedAt: row.connected_at,
          upAt: row.up_at,
          downAt: row.down_at,
        }
      : null;
    const unwritten = this.#unwritten;
    this.#cached = stored && unwritten?.linkId === stored.linkId ? { ...stored, ...unwritten.change } : stored;
    return this.#cached;
  }

  /** A new link starts: it replaces whatever was recorded. */
  begin(linkId: string, at: number): LinkRecord {
    this.#unwritten = null;
    this.sql.exec(
      "INSERT OR REPLACE INTO link (one,link_id,state,protocol,hello,initialize,connected_at,up_at,down_at) VALUES (1,?,'hello',NULL,NULL,NULL,?,NULL,NULL)",
      linkId,
      at,
    );
    this.#cached = {
      linkId,
      state: "hello",
      protocol: null,
      hello: null,
      initialize: null,
      connectedAt: at,
      upAt: null,
      downAt: null,
    };
    return this.#cached;
  }

  /**
   * Changes the link in memory only: read back by current(), written by the link's next update. A new block of
   * request ids taken by a request sent unrecorded is saved with that update too.
   */
  hold(linkId: string, change: LinkChange): void {
    const cached = this.current();
    if (cached?.linkId !== linkId) return;
    this.#unwritten = { linkId, change: { ...this.#unwritten?.change, ...defined(change) } };
    this.#cached = { ...cached, ...defined(change) };
  }

  /** Whether the current link has changes held in memory (hold). */
  holds(): boolean {
    return this.#unwritten !== null;
  }

  update(linkId: string, change: LinkChange): void {
    const held = this.#unwritten?.linkId === linkId ? this.#unwritten.change : null;
    if (held) {
      change = { ...held, ...defined(change) };
      this.#unwritten = null;
    }
    const columns: Record<string, SqlStorageValue> = {};
    if (change.state !== undefined) columns.state = change.state;
    if (change.protocol !== undefined) columns.protocol = change.protocol;
    if (change.hello !== undefined) columns.hello = JSON.stringify(change.hello);
    if (change.initialize !== undefined) columns.initialize = JSON.stringify(change.initialize);
    if (change.upAt !== undefined) columns.up_at = change.upAt;
    if (change.downAt !== undefined) columns.down_at = change.downAt;
    const names = Object.keys(columns);
    if (names.length === 0) return;
    this.sql.exec(
      `UPDATE link SET ${names.map((n) => `${n} = ?`).join(", ")} WHERE link_id=?`,
      ...Object.values(columns),
      linkId,
    );
    // The row changed as the copy does (no re-read: the hello and initialize result are not parsed again).
    const cached = this.#cached;
    this.#cached = cached?.linkId === linkId ? { ...cached, ...defined(change) } : undefined;
    if (held) this.saveRequestIds();
  }

  /**
   * A meta value. The table holds a handful of rows, read together the first time any is asked (a link's set-up
   * asks three), so a fresh or woken object prepares and runs one query for them, not one a key.
   */
  meta(key: string): string | null {
    if (!this.#metaRead) {
      for (const { k, v } of this.sql.exec<{ k: string; v: string }>("SELECT k,v FROM meta")) this.#meta.set(k, v);
      this.#metaRead = true;
    }
    return this.#meta.get(key) ?? null;
  }

  /** Writes a meta value, only when it changes (a write, even of the same value, holds the object's output). */
  setMeta(key: string, value: string): void {
    if (this.meta(key) === value) return;
    this.sql.exec("INSERT OR REPLACE INTO meta (k,v) VALUES (?,?)", key, value);
    this.#meta.set(key, value);
  }

  /** Drops the cached copies (a transaction rolled back what it wrote): the next read is from storage. */
  forget(): void {
    this.#cached = undefined;
    this.#meta.clear();
    this.#metaRead = false;
  }

  /**
   * The next id for a request the instance sends the device. Ids are reserved in blocks of ID_BLOCK, persisted, and
   * handed out from memory, so a request costs no counter write; after an eviction the rest of the block is skipped
   * — ids never repeat, they only leave gaps. A new block is read here and saved by saveRequestIds, which the sender
   * calls after the request went out (runtime.ts sendRequest), so the block's write holds no send back.
   */
  nextRequestId(): number {
    if (this.#nextId >= this.#reservedTo) {
      this.#nextId = Number(this.meta("next_request_id") ?? 0);
      this.#reservedTo = this.#nextId + ID_BLOCK;
      this.#blockSaved = false;
    }
    return ++this.#nextId;
  }

  /**
   * Saves the block nextRequestId took, if it is new: in the same synchronous run as that id's first use, or — for a
   * request sent unrecorded while the link holds changes in memory — with those changes (update).
   */
  saveRequestIds(): void {
    if (this.#blockSaved) return;
    this.setMeta("next_request_id", String(this.#reservedTo));
    this.#blockSaved = true;
  }

  /** The end of the block of request ids reserved (in memory, saved or not). */
  reservedIds(): number {
    return this.#reservedTo;
  }

  /** Makes sure the stored block reaches `to` (a block recorded elsewhere, handshake.ts): ids never repeat. */
  reserveIdsTo(to: number): void {
    if (Number(this.meta("next_request_id") ?? 0) < to) this.setMeta("next_request_id", String(to));
  }
}
