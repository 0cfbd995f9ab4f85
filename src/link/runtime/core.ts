/**
 * The tables every feature relies on: the link's state and the object's facts (store.ts), outstanding requests
 * (outbound.ts), deadlines (deadlines.ts) and large texts in chunks (chunks.ts). A feature with no handlers, first
 * in the registry's order, so its schema steps run before any other feature's.
 */
import type { LinkFeature } from "./runtime";

const TABLES = [
  "CREATE TABLE IF NOT EXISTS link (" +
    "one INTEGER PRIMARY KEY CHECK (one=1)," +
    "link_id TEXT NOT NULL,state TEXT NOT NULL,protocol INTEGER,hello TEXT,initialize TEXT," +
    "connected_at INTEGER NOT NULL,up_at INTEGER,down_at INTEGER)",
  `CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY,v TEXT NOT NULL)`,
  "CREATE TABLE IF NOT EXISTS outbound (" +
    "id INTEGER PRIMARY KEY,link_id TEXT NOT NULL,origin TEXT NOT NULL,origin_id TEXT,method TEXT NOT NULL," +
    "session_id TEXT,purpose TEXT,keep INTEGER NOT NULL DEFAULT 0,memo TEXT,created_at INTEGER NOT NULL," +
    "due INTEGER)",
  `CREATE INDEX IF NOT EXISTS outbound_origin ON outbound (origin,origin_id)`,
  `CREATE INDEX IF NOT EXISTS outbound_link ON outbound (link_id)`,
  "CREATE TABLE IF NOT EXISTS deadlines (" +
    "kind TEXT NOT NULL,key TEXT NOT NULL,due INTEGER NOT NULL,PRIMARY KEY (kind,key))",
  "CREATE TABLE IF NOT EXISTS chunks (" +
    "owner TEXT NOT NULL,key TEXT NOT NULL,seq INTEGER NOT NULL,data TEXT NOT NULL," +
    "PRIMARY KEY (owner,key,seq))",
];

export const core: LinkFeature = {
  name: "core",
  migrations: [
    {
      step: 1,
      run: TABLES,
    },
    {
      step: 2,
      // An object from before a request's answer deadline lived in its own row has an outbound table without `due`.
      run: (sql) => {
        const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('outbound')").toArray();
        if (!columns.some((c) => c.name === "due")) sql.exec("ALTER TABLE outbound ADD COLUMN due INTEGER");
      },
    },
  ],
  // Step 1's tables have step 2's column: a fresh object makes them without step 2's look at the table.
  fresh: TABLES,
};
