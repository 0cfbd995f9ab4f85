/**
 * Cards in the object's SQLite. A card is keyed by (sessionId, toolCallId): ACP's toolCallId is unique within its
 * session only, so two sessions' cards may share one (the ACP SDK's example agent uses call_1 and call_2 in every
 * session). The row keeps the device's own request id, whether the card is patient, its deadline and how it ended
 * (an ended card is remembered for a while); its params are in chunks, and the client sockets that answered it with
 * an error (they cannot show it) in card_refusals.
 *
 * Toward clients a card's id is `card:<session>/<toolCall>`, each part percent-encoded (so a `/` or `:` in an id
 * cannot make two cards' ids alike); the same text after `card:` keys its chunks and its deadline.
 */
import type { CardKey } from "../../../protocol/cards";
import type { CardEnd } from "../../../protocol/instance";
import type { JsonRpcId } from "../../../protocol/jsonrpc";
import { Chunks } from "../../runtime/chunks";
import type { Migrating, SchemaStep } from "../../runtime/schema-steps";
import { OnDemandTables } from "../../runtime/tables-on-demand";

export type EndedHow = CardEnd;

export interface Card {
  key: CardKey;
  method: string;
  deviceRequestId: JsonRpcId;
  linkId: string;
  patient: boolean;
  openedAt: number;
  dueAt: number | null;
  endedAt: number | null;
  endedHow: EndedHow | null;
}

/** The text a card is known by in chunks, deadlines and its client id. */
export const keyText = ({ sessionId, toolCallId }: CardKey) =>
  `${encodeURIComponent(sessionId)}/${encodeURIComponent(toolCallId)}`;

/** The key a keyText names, or null when it names none. */
export function parseKeyText(text: string): CardKey | null {
  const parts = text.split("/");
  if (parts.length !== 2 || !parts[0] || !parts[1]) return null;
  try {
    return { sessionId: decodeURIComponent(parts[0]), toolCallId: decodeURIComponent(parts[1]) };
  } catch {
    return null;
  }
}

/**
 * The tables as step 2 makes them: its statements are the fresh tables' too, so a later change of either table is
 * a step of its own, never an edit of these.
 */
const CARDS_COLUMNS =
  "(session_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, method TEXT NOT NULL, device_request_id TEXT NOT NULL, " +
  "link_id TEXT NOT NULL, patient INTEGER NOT NULL, opened_at INTEGER NOT NULL, due_at INTEGER, " +
  "ended_at INTEGER, ended_how TEXT, PRIMARY KEY (session_id, tool_call_id))";
const CARD_REFUSALS =
  "CREATE TABLE card_refusals (" +
  "session_id TEXT NOT NULL,tool_call_id TEXT NOT NULL,sid TEXT NOT NULL," +
  "PRIMARY KEY (session_id,tool_call_id,sid))";
const CARDS_FRESH: readonly string[] = [`CREATE TABLE cards ${CARDS_COLUMNS}`, CARD_REFUSALS];

const CARDS_STEPS: readonly SchemaStep[] = [
  {
    step: 1,
    run: [
      "CREATE TABLE IF NOT EXISTS cards (" +
        "tool_call_id TEXT PRIMARY KEY,method TEXT NOT NULL,session_id TEXT NOT NULL,device_request_id TEXT NOT NULL," +
        "link_id TEXT NOT NULL,patient INTEGER NOT NULL,opened_at INTEGER NOT NULL,due_at INTEGER," +
        "ended_at INTEGER,ended_how TEXT)",
    ],
  },
  {
    step: 2,
    // Keyed by (session, toolCallId); the params' chunks and the deadlines follow the new key text.
    run: (sql) => {
      sql.exec(`CREATE TABLE cards_by_session ${CARDS_COLUMNS}`);
      sql.exec(
        "INSERT INTO cards_by_session " +
          "SELECT session_id,tool_call_id,method,device_request_id,link_id,patient,opened_at,due_at,ended_at," +
          "ended_how FROM cards",
      );
      const rows = sql.exec<{ session_id: string; tool_call_id: string }>("SELECT session_id,tool_call_id FROM cards");
      for (const row of rows.toArray()) {
        const text = keyText({ sessionId: row.session_id, toolCallId: row.tool_call_id });
        sql.exec("UPDATE chunks SET key=? WHERE owner='card' AND key=?", text, row.tool_call_id);
        sql.exec("UPDATE deadlines SET key=? WHERE kind='card' AND key=?", text, row.tool_call_id);
      }
      sql.exec("DROP TABLE cards");
      sql.exec("ALTER TABLE cards_by_session RENAME TO cards");
      sql.exec(CARD_REFUSALS);
    },
  },
];

/** The cards feature's tables (cards.ts): made by the first card. */
export const CARD_TABLES: Migrating = { name: "cards", onDemand: true, migrations: CARDS_STEPS, fresh: CARDS_FRESH };

interface CardRow extends Record<string, SqlStorageValue> {
  session_id: string;
  tool_call_id: string;
  method: string;
  device_request_id: string;
  link_id: string;
  patient: number;
  opened_at: number;
  due_at: number | null;
  ended_at: number | null;
  ended_how: string | null;
}

const toCard = (row: CardRow): Card => ({
  key: { sessionId: row.session_id, toolCallId: row.tool_call_id },
  method: row.method,
  deviceRequestId: JSON.parse(row.device_request_id) as JsonRpcId,
  linkId: row.link_id,
  patient: row.patient === 1,
  openedAt: row.opened_at,
  dueAt: row.due_at,
  endedAt: row.ended_at,
  endedHow: row.ended_how as EndedHow | null,
});

const keyArgs = (key: CardKey) => [key.sessionId, key.toolCallId] as const;

export class CardStore {
  /** The params as clients are shown them; `#whole` the device's own, only for a card shown cut. */
  readonly #params: Chunks;
  readonly #whole: Chunks;
  readonly #tables: OnDemandTables;

  constructor(sql: SqlStorage) {
    this.#params = new Chunks(sql, "card");
    this.#whole = new Chunks(sql, "card-whole");
    this.#tables = new OnDemandTables(sql, CARD_TABLES);
  }

  /** The cards `where` picks (none while the tables are not made). */
  #rows(where: string, ...args: SqlStorageValue[]): Card[] {
    return this.#tables.ifMade([], (sql) =>
      sql
        .exec<CardRow>(`SELECT * FROM cards WHERE ${where}`, ...args)
        .toArray()
        .map(toCard),
    );
  }

  get(key: CardKey): Card | null {
    return this.#rows("session_id = ? AND tool_call_id = ?", key.sessionId, key.toolCallId)[0] ?? null;
  }

  /** The open cards, oldest first. */
  open(): Card[] {
    return this.#rows("ended_at IS NULL ORDER BY opened_at, rowid");
  }

  /** How many cards are open, and their shown params' UTF-8 bytes together (an ended card's params are gone). */
  openSize(): { count: number; bytes: number } {
    const count = this.#tables.ifMade(
      0,
      (sql) => sql.exec<{ count: number }>("SELECT COUNT(*) AS count FROM cards WHERE ended_at IS NULL").one().count,
    );
    return { count, bytes: this.#params.totalBytes() };
  }

  /** The open card the device asked with this request id, if any. */
  openByDeviceRequest(id: JsonRpcId): Card | null {
    return this.#rows("device_request_id = ? AND ended_at IS NULL", JSON.stringify(id))[0] ?? null;
  }

  /**
   * Records a newly opened card (replacing an ended one of the same key) and its params as shown; `whole`: the
   * device's own, when what is shown is cut from them.
   */
  add(card: Omit<Card, "endedAt" | "endedHow">, params: string, whole: string | null = null): void {
    this.#tables.making((sql) =>
      sql.exec(
        "INSERT OR REPLACE INTO cards (session_id,tool_call_id,method,device_request_id,link_id,patient,opened_at,due_at) VALUES (?,?,?,?,?,?,?,?)",
        card.key.sessionId,
        card.key.toolCallId,
        card.method,
        JSON.stringify(card.deviceRequestId),
        card.linkId,
        card.patient ? 1 : 0,
        card.openedAt,
        card.dueAt,
      ),
    );
    this.#params.put(keyText(card.key), params);
    if (whole === null) this.#whole.delete(keyText(card.key));
    else this.#whole.put(keyText(card.key), whole);
  }

  /** The params of an open card, as clients are shown them. */
  params(key: CardKey): unknown {
    return JSON.parse(this.#params.get(keyText(key)) ?? "null");
  }

  /** The params of an open card, as the device sent them (what an answer is checked against). */
  wholeParams(key: CardKey): unknown {
    const whole = this.#whole.get(keyText(key));
    return whole === null ? this.params(key) : JSON.parse(whole);
  }

  /** Ends an open card exactly once: its row as it was, or null when it was not open. Its params go. */
  end(key: CardKey, how: EndedHow): Card | null {
    const row = this.#tables.ifMade(undefined, (sql) => {
      const ended = sql
        .exec<CardRow>(
          "UPDATE cards SET ended_at=?,ended_how=? WHERE session_id=? AND tool_call_id=? AND ended_at IS NULL RETURNING *",
          Date.now(),
          how,
          key.sessionId,
          key.toolCallId,
        )
        .toArray()[0];
      if (ended) sql.exec("DELETE FROM card_refusals WHERE session_id=? AND tool_call_id=?", ...keyArgs(key));
      return ended;
    });
    if (!row) return null;
    this.#params.delete(keyText(key));
    this.#whole.delete(keyText(key));
    return toCard(row);
  }

  /** Forgets cards that ended before `time`. */
  forgetEndedBefore(time: number): void {
    this.#tables.ifMade(undefined, (sql) => sql.exec("DELETE FROM cards WHERE ended_at<?", time));
  }

  /** A client socket answered the card with an error: it cannot show it. */
  refuse(key: CardKey, sid: string): void {
    this.#tables.making((sql) =>
      sql.exec(
        "INSERT OR IGNORE INTO card_refusals (session_id,tool_call_id,sid) VALUES (?,?,?)",
        ...keyArgs(key),
        sid,
      ),
    );
  }

  /** The sockets that answered the card with an error. */
  refusedBy(key: CardKey): Set<string> {
    const rows = this.#tables.ifMade([], (sql) =>
      sql
        .exec<{ sid: string }>("SELECT sid FROM card_refusals WHERE session_id=? AND tool_call_id=?", ...keyArgs(key))
        .toArray(),
    );
    return new Set(rows.map((row) => row.sid));
  }

  /** A socket went away: its refusals no longer count. */
  forgetRefusalsOf(sid: string): void {
    this.#tables.ifMade(undefined, (sql) => sql.exec("DELETE FROM card_refusals WHERE sid=?", sid));
  }
}
