import { OWN_TABLES } from "../../src/link/runtime/schema-steps";

/**
 * The device object's SQLite schema as objects wrote it before schema steps were numbered: every table created with
 * IF NOT EXISTS on each start, nothing recorded. Frozen here so a test can write an object the way those objects
 * were written and check the numbered steps adopt it with its rows.
 */
export const SCHEMA_BEFORE_STEPS = [
  `CREATE TABLE link (one INTEGER PRIMARY KEY CHECK (one = 1), link_id TEXT NOT NULL, state TEXT NOT NULL,
     protocol INTEGER, hello TEXT, initialize TEXT, connected_at INTEGER NOT NULL, up_at INTEGER, down_at INTEGER)`,
  `CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`,
  `CREATE TABLE outbound (id INTEGER PRIMARY KEY, link_id TEXT NOT NULL, origin TEXT NOT NULL, origin_id TEXT,
     method TEXT NOT NULL, session_id TEXT, purpose TEXT, keep INTEGER NOT NULL DEFAULT 0, memo TEXT,
     created_at INTEGER NOT NULL, due INTEGER)`,
  `CREATE INDEX outbound_origin ON outbound (origin, origin_id)`,
  `CREATE INDEX outbound_link ON outbound (link_id)`,
  `CREATE TABLE deadlines (kind TEXT NOT NULL, key TEXT NOT NULL, due INTEGER NOT NULL, PRIMARY KEY (kind, key))`,
  `CREATE TABLE turns (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, turn_id TEXT, since INTEGER NOT NULL,
     running INTEGER NOT NULL DEFAULT 1, origin TEXT, origin_id TEXT, device_request_id INTEGER,
     kept INTEGER NOT NULL DEFAULT 0, link_id TEXT)`,
  `CREATE INDEX turns_session ON turns (session_id)`,
  `CREATE INDEX turns_turn_id ON turns (turn_id)`,
  `CREATE TABLE chunks (owner TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
     PRIMARY KEY (owner, key, seq))`,
  `CREATE TABLE replay_batches (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
     frames INTEGER NOT NULL, bytes INTEGER NOT NULL, texts TEXT NOT NULL)`,
  `CREATE TABLE replay_dropped (session_id TEXT PRIMARY KEY, dropped INTEGER NOT NULL)`,
  `CREATE TABLE cards (tool_call_id TEXT PRIMARY KEY, method TEXT NOT NULL, session_id TEXT NOT NULL,
     device_request_id TEXT NOT NULL, link_id TEXT NOT NULL, patient INTEGER NOT NULL, opened_at INTEGER NOT NULL,
     due_at INTEGER, ended_at INTEGER, ended_how TEXT)`,
  `CREATE TABLE terminals (terminal_id TEXT PRIMARY KEY, owner TEXT NOT NULL)`,
];

/** Drops every table of the object's own (not the runtime's `_cf_` ones), leaving its storage as if new. */
export function dropAllTables(sql: SqlStorage): void {
  for (const { name } of sql.exec<{ name: string }>(OWN_TABLES).toArray()) sql.exec(`DROP TABLE "${name}"`);
}
