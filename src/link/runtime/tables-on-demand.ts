import { makeOnDemand, type Migrating } from "./schema-steps";

/**
 * The features whose tables each object has, by its SqlStorage: given at its start (applySteps), added to as first
 * writes make them, and read again from `schema_steps` when forgotten — after a transaction that may have made some
 * rolled back.
 */
const madeBy = new WeakMap<SqlStorage, Set<string>>();

export function knowTables(sql: SqlStorage, made: readonly string[]): void {
  madeBy.set(sql, new Set(made));
}

/** A transaction rolled back: the tables it made, if any, are gone with it. */
export function forgetTables(sql: SqlStorage): void {
  madeBy.delete(sql);
}

function madeIn(sql: SqlStorage): Set<string> {
  let made = madeBy.get(sql);
  if (!made) {
    const rows = sql.exec<{ feature: string }>("SELECT DISTINCT feature FROM schema_steps").toArray();
    made = new Set(rows.map((row) => row.feature));
    madeBy.set(sql, made);
  }
  return made;
}

/** The tables of a feature made on demand (schema-steps.ts `onDemand`), as its store reaches them. */
export class OnDemandTables {
  constructor(
    private readonly sql: SqlStorage,
    private readonly feature: Migrating,
  ) {}

  /**
   * `run`'s result, or `none` while the tables are not made: nothing of the feature was ever written, so a read finds
   * nothing and an update or a delete changes nothing.
   */
  ifMade<T>(none: T, run: (sql: SqlStorage) => T): T {
    return madeIn(this.sql).has(this.feature.name) ? run(this.sql) : none;
  }

  /** Runs a write that adds rows, making the tables first when they are not made yet. */
  making<T>(run: (sql: SqlStorage) => T): T {
    const made = madeIn(this.sql);
    if (!made.has(this.feature.name)) {
      makeOnDemand(this.sql, this.feature);
      made.add(this.feature.name);
    }
    return run(this.sql);
  }
}
