/**
 * Requests the instance has sent the device and not yet seen answered. Each gets a fresh id from the persisted
 * reservation (store.ts: two clients' ids never collide, and an id is never reused after an eviction) and a row
 * saying where the answer goes: back to a client socket (or an HTTP /rpc call) under that client's own id, or to the
 * feature that sent it (origin "instance", by purpose). The row also holds the answer's deadline (`due`), which the
 * deadline alarm reads from here (deadlines.ts) — one row written per request, removed with its answer. The table
 * is core's (core.ts). The rows are also kept in memory, read once after each wake, so the relay's look-ups (an
 * answer's request, a client's id in flight) make no query; every write here keeps both, and `forget` drops the
 * memory when a transaction that wrote may have rolled back.
 *
 * A row may be held: kept in memory only, until the relay writes it (`writeHeld`, forwarding.ts) once its request has
 * been outstanding OUTBOUND_HOLD_MS. A request answered before then writes nothing at all — no row, no
 * commit — which is most relayed requests. A crash within that time loses the request: the device's answer finds no
 * row and is dropped, and the client, whose socket died with the object, asks again; no method whose loss would do
 * more (a prompt, a terminal, a session's opening) is held, since a feature hooks each. Only a request sent outside
 * any transaction is held, so a rollback never has a held row to undo: `forget` keeps them.
 */
import type { JsonRpcId } from "../../protocol/jsonrpc";

/** Where the answer to the instance's own requests goes. */
export const INSTANCE_ORIGIN = "instance";

export interface OutboundRequest {
  /** The id the device sees. */
  id: number;
  linkId: string;
  /** A client's socket id, `http:<id>` for an /rpc call, or "instance". */
  origin: string;
  /** The client's own id for it (null for the instance's requests). */
  originId: JsonRpcId | null;
  method: string;
  sessionId: string | null;
  /** For the instance's requests: the deviceAnswers handler that takes the answer. */
  purpose: string | null;
  /** Survives its link going down (a feature re-sends it on the next link); otherwise it fails then. */
  keep: boolean;
  /** A small JSON value a feature kept with the request for when its answer comes (e.g. session/new's cwd). */
  memo: unknown;
  /** When it times out (ms; the deadline kind REQUEST_DEADLINE, keyed by id), or null: no time limit. */
  due: number | null;
}

interface Row extends Record<string, SqlStorageValue> {
  id: number;
  link_id: string;
  origin: string;
  origin_id: string | null;
  method: string;
  session_id: string | null;
  purpose: string | null;
  keep: number;
  memo: string | null;
  due: number | null;
}

const toRequest = (row: Row): OutboundRequest => ({
  id: row.id,
  linkId: row.link_id,
  origin: row.origin,
  originId: row.origin_id === null ? null : (JSON.parse(row.origin_id) as JsonRpcId),
  method: row.method,
  sessionId: row.session_id,
  purpose: row.purpose,
  keep: row.keep === 1,
  memo: row.memo === null ? null : (JSON.parse(row.memo) as unknown),
  due: row.due,
});

/** The outbound rows' deadlines, for the one alarm (deadlines.ts). */
export const OUTBOUND_DEADLINES = { table: "outbound", key: "id" } as const;

const originKey = (origin: string, originId: string) => `${origin}\n${originId}`;

/** How long a relayed request's row is held in memory before it is written (forwarding.ts writes it then). */
export const OUTBOUND_HOLD_MS = 1_000;

export class Outbound {
  /** The table's rows by id, and the ids by client and client id; null until read (after a wake or `forget`). */
  #rows: Map<number, Row> | null = null;
  #byOrigin = new Map<string, number>();
  /** Rows held (not written yet), by id, with when each was added; they are in #rows too. */
  readonly #held = new Map<number, { row: Row; createdAt: number; round: number }>();
  /** The round of held rows now filling (closeRound). */
  #round = 0;

  /** `empty`: the table was made just now, so there is nothing to read. */
  constructor(
    private readonly sql: SqlStorage,
    empty = false,
  ) {
    if (empty) this.#rows = new Map();
  }

  #memory(): Map<number, Row> {
    if (this.#rows) return this.#rows;
    this.#rows = new Map();
    this.#byOrigin.clear();
    for (const row of this.sql.exec<Row>("SELECT * FROM outbound")) this.#remember(row);
    for (const { row } of this.#held.values()) this.#remember(row);
    return this.#rows;
  }

  #remember(row: Row): void {
    this.#memory().set(row.id, row);
    if (row.origin_id !== null) this.#byOrigin.set(originKey(row.origin, row.origin_id), row.id);
  }

  /** Takes rows removed from the table (or held ones) out of memory too. */
  #removed(rows: Row[]): OutboundRequest[] {
    for (const row of rows) this.#forgetRow(row);
    return rows.map(toRequest);
  }

  #forgetRow(row: Row): void {
    this.#memory().delete(row.id);
    this.#held.delete(row.id);
    if (row.origin_id === null) return;
    const key = originKey(row.origin, row.origin_id);
    if (this.#byOrigin.get(key) === row.id) this.#byOrigin.delete(key);
  }

  /** Drops what is in memory; the next look-up reads the table (a transaction that wrote here rolled back). */
  forget(): void {
    this.#rows = null;
  }

  /**
   * Records a request; its deadline (due) must already be known to the alarm (LinkRuntime.track). A `held` one is
   * kept in memory only, until writeHeld (never inside a transaction: see the top of this file).
   */
  add(request: OutboundRequest, held = false): void {
    const row: Row = {
      id: request.id,
      link_id: request.linkId,
      origin: request.origin,
      origin_id: request.originId === null ? null : JSON.stringify(request.originId),
      method: request.method,
      session_id: request.sessionId,
      purpose: request.purpose,
      keep: request.keep ? 1 : 0,
      memo: request.memo == null ? null : JSON.stringify(request.memo),
      due: request.due,
    };
    this.#memory();
    if (held) this.#held.set(row.id, { row, createdAt: Date.now(), round: this.#round });
    else this.#insert(row, Date.now());
    this.#remember(row);
  }

  /**
   * Closes the round of held rows filling now, and returns its number: rows held from here on are in the next one.
   * The relay's timer closes one when it is armed and writes that round's rows when it fires (heldBefore), so a row
   * is written after OUTBOUND_HOLD_MS to twice that, counted by the timer rather than by Date (which a test may
   * freeze).
   */
  closeRound(): number {
    this.#round += 1;
    return this.#round;
  }

  /** The held requests of rounds before `round`. */
  heldBefore(round: number): OutboundRequest[] {
    return [...this.#held.values()].filter((h) => h.round < round).map((h) => toRequest(h.row));
  }

  /** Whether any row is held. */
  holds(): boolean {
    return this.#held.size > 0;
  }

  /** Writes a held request's row; if that fails it stays held (the caller decides what becomes of it). */
  write(id: number): void {
    const held = this.#held.get(id);
    if (!held) return;
    this.#insert(held.row, held.createdAt);
    this.#held.delete(id);
  }

  #insert(row: Row, createdAt: number): void {
    this.sql.exec(
      "INSERT INTO outbound (id,link_id,origin,origin_id,method,session_id,purpose,keep,memo,created_at,due) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
      row.id,
      row.link_id,
      row.origin,
      row.origin_id,
      row.method,
      row.session_id,
      row.purpose,
      row.keep,
      row.memo,
      createdAt,
      row.due,
    );
  }

  /** The request with this device-side id, left in place (routeDeviceAnswer: read, answer, then remove). */
  find(id: number): OutboundRequest | null {
    const row = this.#memory().get(id);
    return row ? toRequest(row) : null;
  }

  remove(id: number): void {
    const row = this.#memory().get(id);
    if (!this.#held.has(id)) this.sql.exec("DELETE FROM outbound WHERE id=?", id);
    if (row) this.#forgetRow(row);
  }

  /** Removes and returns the request with this device-side id. */
  take(id: number): OutboundRequest | null {
    const held = this.#held.get(id);
    if (held) return this.#removed([held.row])[0]!;
    this.#memory();
    const rows = this.sql.exec<Row>("DELETE FROM outbound WHERE id=? RETURNING *", id).toArray();
    return this.#removed(rows)[0] ?? null;
  }

  /** Every request in flight that matches, written or held (the table is wholly in memory once read). */
  #where(match: (row: Row) => boolean): Row[] {
    return [...this.#memory().values()].filter(match);
  }

  /** The held rows that match (a take hands them to #removed with the table's). */
  #heldWhere(match: (row: Row) => boolean): Row[] {
    return [...this.#held.values()].map((h) => h.row).filter(match);
  }

  /** Removes and returns a client's request by that client's own id. */
  takeByOrigin(origin: string, originId: JsonRpcId): OutboundRequest | null {
    const request = this.findByOrigin(origin, originId);
    if (request && this.#held.has(request.id)) return this.take(request.id);
    const rows = this.sql
      .exec<Row>("DELETE FROM outbound WHERE origin=? AND origin_id=? RETURNING *", origin, JSON.stringify(originId))
      .toArray();
    return this.#removed(rows)[0] ?? null;
  }

  /** A client's request by that client's own id, left in place. */
  findByOrigin(origin: string, originId: JsonRpcId): OutboundRequest | null {
    this.#memory();
    const id = this.#byOrigin.get(originKey(origin, JSON.stringify(originId)));
    return id === undefined ? null : this.find(id);
  }

  /** Removes and returns every request of a client that went away. */
  takeAllOf(origin: string): OutboundRequest[] {
    this.#memory();
    const held = this.#heldWhere((row) => row.origin === origin);
    const rows = this.sql.exec<Row>("DELETE FROM outbound WHERE origin=? RETURNING *", origin).toArray();
    return this.#removed([...rows, ...held]);
  }

  /** Removes and returns the requests of a link that went down, except those kept across links. */
  takeUnkeptOf(linkId: string): OutboundRequest[] {
    this.#memory();
    const held = this.#heldWhere((row) => row.link_id === linkId && row.keep === 0);
    const rows = this.sql.exec<Row>("DELETE FROM outbound WHERE link_id=? AND keep=0 RETURNING *", linkId).toArray();
    return this.#removed([...rows, ...held]);
  }

  /** The clients (sockets, HTTP /rpc calls) with requests in flight. */
  clientOrigins(): string[] {
    const origins = this.#where((row) => row.origin !== INSTANCE_ORIGIN).map((row) => row.origin);
    return [...new Set(origins)];
  }

  /** How many requests of this method are in flight (terminals: opens not yet answered count toward the limit). */
  countOf(method: string): number {
    return this.#where((row) => row.method === method).length;
  }

  /** Whether a client already has a request with this id in flight (a reused id would make its answers ambiguous). */
  has(origin: string, originId: JsonRpcId): boolean {
    this.#memory();
    return this.#byOrigin.has(originKey(origin, JSON.stringify(originId)));
  }
}
