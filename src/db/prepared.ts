/** A D1 statement with its values bound: `db.prepare(sql).bind(...values)`, written once for every query here. */
export const prepared = (db: D1Database, sql: string, ...values: unknown[]): D1PreparedStatement =>
  db.prepare(sql).bind(...values);
