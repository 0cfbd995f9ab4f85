/**
 * Turns in the object's SQLite. A turn runs from its prompt being forwarded (or the device's task start event, for a
 * turn typed at a terminal) until its answer or its task end. A row may outlive its running: a prompt whose task
 * ended is still awaited until its answer comes, and a prompt kept across a dropped link (capability turns) waits,
 * its params in chunks, to be sent again on the next link. A kept prompt withdrawn while the link was down (its
 * client cancelled it) stays as a row without params and without a client, not running: the next link is told
 * session/cancel for its session instead of getting the prompt again.
 */
import type { JsonRpcId } from "../../../protocol/jsonrpc";
import { Chunks } from "../../runtime/chunks";
import type { Migrating } from "../../runtime/schema-steps";
import { OnDemandTables } from "../../runtime/tables-on-demand";
import { perObject } from "../../runtime/per-object";

/** The turns feature's tables (turns.ts): made by the first turn. */
export const TURN_TABLES: Migrating = {
  name: "turns",
  onDemand: true,
  migrations: [
    {
      step: 1,
      run: [
        "CREATE TABLE IF NOT EXISTS turns (" +
          "id INTEGER PRIMARY KEY,session_id TEXT NOT NULL,turn_id TEXT,since INTEGER NOT NULL," +
          "running INTEGER NOT NULL DEFAULT 1," +
          "origin TEXT,origin_id TEXT,device_request_id INTEGER," +
          "kept INTEGER NOT NULL DEFAULT 0,link_id TEXT)",
        `CREATE INDEX IF NOT EXISTS turns_session ON turns (session_id)`,
        `CREATE INDEX IF NOT EXISTS turns_turn_id ON turns (turn_id)`,
      ],
    },
  ],
};

interface TurnRow extends Record<string, SqlStorageValue> {
  id: number;
  session_id: string;
  turn_id: string | null;
  since: number;
  running: number;
  origin: string | null;
  origin_id: string | null;
  device_request_id: number | null;
  kept: number;
  link_id: string | null;
}

export interface Turn {
  id: number;
  sessionId: string;
  turnId: string | null;
  since: number;
  running: boolean;
  /** The client waiting for the prompt's answer, under its own id; null when none does (any more). */
  origin: string | null;
  originId: JsonRpcId | null;
  /** The instance's own re-sent prompt, whose answer nobody else waits for. */
  deviceRequestId: number | null;
  /** The prompt's params are kept for sending again on the next link. */
  kept: boolean;
  /** The link the prompt was last sent on. */
  linkId: string | null;
}

const toTurn = (row: TurnRow): Turn => ({
  id: row.id,
  sessionId: row.session_id,
  turnId: row.turn_id,
  since: row.since,
  running: row.running === 1,
  origin: row.origin,
  originId: row.origin_id === null ? null : (JSON.parse(row.origin_id) as JsonRpcId),
  deviceRequestId: row.device_request_id,
  kept: row.kept === 1,
  linkId: row.link_id,
});

/** Each object's one store, by its storage: what it knows of running sessions is asked on every frame of a turn. */
export const turnsOf = perObject((sql: SqlStorage) => new TurnStore(sql));

/** Reached through turnsOf only, so an object's running sessions are known in one place. */
class TurnStore {
  readonly prompts: Chunks;
  readonly #tables: OnDemandTables;
  /**
   * The sessions with a running turn: read once, then asked on every streamed notification (replay.ts) without a
   * query. Every write of a turn's running state here drops it, so it is read again at the next question (no turn
   * write rolled back in a transaction is read through it in between: the prompt's beforeForward hook only starts a
   * turn).
   */
  #running: Set<string> | null = null;

  constructor(sql: SqlStorage) {
    this.prompts = new Chunks(sql, "turn");
    this.#tables = new OnDemandTables(sql, TURN_TABLES);
  }

  #rows(where: string, ...args: SqlStorageValue[]): Turn[] {
    return this.#tables.ifMade([], (sql) =>
      sql
        .exec<TurnRow>(`SELECT * FROM turns WHERE ${where} ORDER BY id`, ...args)
        .toArray()
        .map(toTurn),
    );
  }

  /** Changes the rows of turns there are (none while the table is not made). */
  #change(statement: string, ...args: SqlStorageValue[]): void {
    this.#tables.ifMade(undefined, (sql) => sql.exec(statement, ...args));
  }

  /** Records a running turn; its prompt params, when given, are kept for re-sending. */
  start(turn: {
    sessionId: string;
    turnId: string | null;
    origin: string | null;
    originId: JsonRpcId | null;
    linkId: string | null;
    prompt?: string;
  }): number {
    this.#running = null;
    const { id } = this.#tables.making((sql) =>
      sql
        .exec<{ id: number }>(
          "INSERT INTO turns (session_id,turn_id,since,origin,origin_id,kept,link_id) VALUES (?,?,?,?,?,?,?) RETURNING id",
          turn.sessionId,
          turn.turnId,
          Date.now(),
          turn.origin,
          turn.originId === null ? null : JSON.stringify(turn.originId),
          turn.prompt === undefined ? 0 : 1,
          turn.linkId,
        )
        .one(),
    );
    if (turn.prompt !== undefined) this.prompts.put(String(id), turn.prompt);
    return id;
  }

  get(id: number): Turn | null {
    return this.#rows("id = ?", id)[0] ?? null;
  }

  byTurnId(turnId: string): Turn[] {
    return this.#rows("turn_id = ?", turnId);
  }

  byDeviceRequest(id: number): Turn | null {
    return this.#rows("device_request_id = ?", id)[0] ?? null;
  }

  running(): Turn[] {
    return this.#rows("running = 1");
  }

  /** A session's running turns, oldest first. */
  runningOf(sessionId: string): Turn[] {
    return this.#rows("running = 1 AND session_id = ?", sessionId);
  }

  /** How many turns are running. */
  runningCount(): number {
    return this.#tables.ifMade(
      0,
      (sql) => sql.exec<{ count: number }>("SELECT COUNT(*) AS count FROM turns WHERE running=1").one().count,
    );
  }

  /** Prompts kept for the next link: those last sent on another link than this one. */
  keptFor(linkId: string): Turn[] {
    return this.#rows("kept = 1 AND (link_id IS NULL OR link_id != ?)", linkId);
  }

  /** A session's kept prompts not (yet) sent on the link `liveLinkId` (null: no link is up). */
  keptOf(sessionId: string, liveLinkId: string | null): Turn[] {
    return this.#rows("kept = 1 AND session_id = ? AND (link_id IS NULL OR link_id IS NOT ?)", sessionId, liveLinkId);
  }

  all(): Turn[] {
    return this.#rows("1 = 1");
  }

  isRunning(sessionId: string): boolean {
    this.#running ??= new Set(
      this.#tables
        .ifMade([], (sql) =>
          sql.exec<{ session_id: string }>("SELECT DISTINCT session_id FROM turns WHERE running=1").toArray(),
        )
        .map((row) => row.session_id),
    );
    return this.#running.has(sessionId);
  }

  setRunning(id: number, running: boolean): void {
    this.#change("UPDATE turns SET running=? WHERE id=?", running ? 1 : 0, id);
    this.#running = null;
  }

  /** Nobody waits for the prompt's answer any more (its client went away). */
  forgetOrigin(id: number): void {
    this.#change("UPDATE turns SET origin=NULL,origin_id=NULL WHERE id=?", id);
  }

  /** The prompt went out again on `linkId`, awaited by its client or (deviceRequestId) by the instance. */
  resent(id: number, linkId: string, deviceRequestId: number | null): void {
    this.#change("UPDATE turns SET link_id=?,device_request_id=? WHERE id=?", linkId, deviceRequestId, id);
  }

  /** A kept prompt is withdrawn: never sent again, nobody waits for it; the row stays until the next link. */
  withdraw(id: number): void {
    this.#change("UPDATE turns SET running=0,origin=NULL,origin_id=NULL,device_request_id=NULL WHERE id=?", id);
    this.#running = null;
    this.prompts.delete(String(id));
  }

  remove(id: number): void {
    this.#change("DELETE FROM turns WHERE id=?", id);
    this.#running = null;
    this.prompts.delete(String(id));
  }
}

export type { TurnStore };
