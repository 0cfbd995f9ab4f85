/**
 * The tables every feature relies on: the link's state and the object's facts (store.ts), outstanding requests
 * (outbound.ts) and deadlines (deadlines.ts). A feature with no handlers, first in the registry's order, so its
 * schema steps run before any other feature's.
 */
import { CHUNKS_TABLE } from "./chunks";
import type { LinkFeature } from "./runtime";

const LINK =
  "CREATE TABLE IF NOT EXISTS link (" +
  "one INTEGER PRIMARY KEY CHECK (one=1)," +
  "link_id TEXT NOT NULL,state TEXT NOT NULL,protocol INTEGER,hello TEXT,initialize TEXT," +
  "connected_at INTEGER NOT NULL,up_at INTEGER,down_at INTEGER)";
const META = `CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY,v TEXT NOT NULL)`;
const OUTBOUND =
  "CREATE TABLE IF NOT EXISTS outbound (" +
  "id INTEGER PRIMARY KEY,link_id TEXT NOT NULL,origin TEXT NOT NULL,origin_id TEXT,method TEXT NOT NULL," +
  "session_id TEXT,purpose TEXT,keep INTEGER NOT NULL DEFAULT 0,memo TEXT,created_at INTEGER NOT NULL," +
  "due INTEGER)";
const DEADLINES =
  "CREATE TABLE IF NOT EXISTS deadlines (" +
  "kind TEXT NOT NULL,key TEXT NOT NULL,due INTEGER NOT NULL,PRIMARY KEY (kind,key))";

export const core: LinkFeature = {
  name: "core",
  migrations: [
    {
      step: 1,
      run: [
        LINK,
        META,
        OUTBOUND,
        `CREATE INDEX IF NOT EXISTS outbound_origin ON outbound (origin,origin_id)`,
        `CREATE INDEX IF NOT EXISTS outbound_link ON outbound (link_id)`,
        DEADLINES,
        CHUNKS_TABLE,
      ],
    },
    {
      step: 2,
      // An object from before a request's answer deadline lived in its own row has an outbound table without `due`.
      run: (sql) => {
        const columns = sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('outbound')").toArray();
        if (!columns.some((c) => c.name === "due")) sql.exec("ALTER TABLE outbound ADD COLUMN due INTEGER");
      },
    },
    {
      step: 3,
      // The outbound rows are the requests in flight, all kept in memory (outbound.ts): a delete by client or by link
      // reads a handful of rows, and the indexes were two statements of every first link and a write of every row.
      run: ["DROP INDEX IF EXISTS outbound_origin", "DROP INDEX IF EXISTS outbound_link"],
    },
  ],
  // Step 1's tables with step 2's column and without step 3's indexes; the chunks are a feature of their own now
  // (chunks.ts), made on demand.
  fresh: [LINK, META, OUTBOUND, DEADLINES],
};
