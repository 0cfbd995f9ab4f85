/**
 * Text too large for one SQLite value (a Durable Object's SQLite takes about 2 MB a value): kept as ordered chunks
 * under (owner, key). A prompt kept for re-sending may be 33 MB of base64; a card's params may carry a large diff.
 * The table is core's (core.ts).
 */

/** UTF-16 units a chunk holds: at most 3 bytes each in UTF-8, so a chunk stays under 1.5 MB. */
export const CHUNK_UNITS = 512 * 1024;

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit < 0xdc00;

export class Chunks {
  constructor(
    private readonly sql: SqlStorage,
    private readonly owner: string,
  ) {}

  /** Stores (or replaces) the text under `key`. */
  put(key: string, text: string): void {
    this.delete(key);
    for (let start = 0, seq = 0; start < text.length; seq++) {
      let end = Math.min(start + CHUNK_UNITS, text.length);
      // Never split a surrogate pair: half of one would not survive the trip through UTF-8.
      if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
      this.sql.exec(
        "INSERT INTO chunks (owner,key,seq,data) VALUES (?,?,?,?)",
        this.owner,
        key,
        seq,
        text.slice(start, end),
      );
      start = end;
    }
  }

  /** The text stored under `key`, or null. */
  get(key: string): string | null {
    const rows = this.sql
      .exec<{ data: string }>("SELECT data FROM chunks WHERE owner=? AND key=? ORDER BY seq", this.owner, key)
      .toArray();
    return rows.length === 0 ? null : rows.map((row) => row.data).join("");
  }

  /** The UTF-8 bytes of every text this owner has stored. */
  totalBytes(): number {
    return this.sql
      .exec<{ bytes: number }>(
        "SELECT COALESCE(SUM(length(CAST(data AS BLOB))),0) AS bytes FROM chunks WHERE owner=?",
        this.owner,
      )
      .one().bytes;
  }

  delete(key: string): void {
    this.sql.exec("DELETE FROM chunks WHERE owner=? AND key=?", this.owner, key);
  }
}
