/**
 * Text too large for one SQLite value (a Durable Object's SQLite takes about 2 MB a value): kept as ordered chunks
 * under (owner, key). A prompt kept for re-sending may be 33 MB of base64; a card's params may carry a large diff.
 * The table is made by the first text kept (`chunks`, made on demand): most links keep none.
 */
import type { LinkFeature } from "./runtime";
import { OnDemandTables } from "./tables-on-demand";

/**
 * The table as core's step 1 made it, word for word: core still makes it on an object from before numbered steps,
 * and `IF NOT EXISTS` lets this feature's step adopt it there.
 */
export const CHUNKS_TABLE =
  "CREATE TABLE IF NOT EXISTS chunks (" +
  "owner TEXT NOT NULL,key TEXT NOT NULL,seq INTEGER NOT NULL,data TEXT NOT NULL," +
  "PRIMARY KEY (owner,key,seq))";

export const chunks: LinkFeature = { name: "chunks", onDemand: true, migrations: [{ step: 1, run: [CHUNKS_TABLE] }] };

/** UTF-16 units a chunk holds: at most 3 bytes each in UTF-8, so a chunk stays under 1.5 MB. */
export const CHUNK_UNITS = 512 * 1024;

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit < 0xdc00;

export class Chunks {
  readonly #tables: OnDemandTables;

  constructor(
    sql: SqlStorage,
    private readonly owner: string,
  ) {
    this.#tables = new OnDemandTables(sql, chunks);
  }

  /** Stores (or replaces) the text under `key`. */
  put(key: string, text: string): void {
    this.delete(key);
    this.#tables.making((sql) => {
      for (let start = 0, seq = 0; start < text.length; seq++) {
        let end = Math.min(start + CHUNK_UNITS, text.length);
        // Never split a surrogate pair: half of one would not survive the trip through UTF-8.
        if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
        sql.exec(
          "INSERT INTO chunks (owner,key,seq,data) VALUES (?,?,?,?)",
          this.owner,
          key,
          seq,
          text.slice(start, end),
        );
        start = end;
      }
    });
  }

  /** The text stored under `key`, or null. */
  get(key: string): string | null {
    const rows = this.#tables.ifMade([], (sql) =>
      sql
        .exec<{ data: string }>("SELECT data FROM chunks WHERE owner=? AND key=? ORDER BY seq", this.owner, key)
        .toArray(),
    );
    return rows.length === 0 ? null : rows.map((row) => row.data).join("");
  }

  /** The UTF-8 bytes of every text this owner has stored. */
  totalBytes(): number {
    return this.#tables.ifMade(
      0,
      (sql) =>
        sql
          .exec<{ bytes: number }>(
            "SELECT COALESCE(SUM(length(CAST(data AS BLOB))),0) AS bytes FROM chunks WHERE owner=?",
            this.owner,
          )
          .one().bytes,
    );
  }

  delete(key: string): void {
    this.#tables.ifMade(undefined, (sql) => sql.exec("DELETE FROM chunks WHERE owner=? AND key=?", this.owner, key));
  }
}
