/**
 * One alarm for every deadline of the object. Deadlines are rows (kind, key, due) — in the deadlines table, or a
 * `due` column of a table that keeps its own (outbound.ts: a request's answer time lives in its row, so a request
 * writes one row, not two); the alarm rings no later than the earliest one. When it rings, every due row is removed
 * and handed to the handler its kind registered (handshake timeouts, request timeouts, the heartbeat sweep, and
 * whatever features add). The table is core's (core.ts).
 *
 * setAlarm is a storage write that the next output waits for, so the alarm is moved only when a new deadline falls
 * before the time it is armed for — remembered in memory, and after an eviction taken to be the earliest row, which
 * it never rings later than. A cleared deadline leaves the alarm where it is: if it rings with nothing due, it is
 * just armed again for the earliest row (one early wake, instead of a write on every clear). Where a burst of work
 * ends with its deadlines gone (a link set up and its presence written), `settle` moves the alarm past them: one
 * write instead of a wake.
 */
export interface DueDeadline {
  kind: string;
  key: string;
}

/** A table whose rows carry their own deadline of one kind in a nullable `due` column; the handler removes the row. */
export interface DueColumn {
  kind: string;
  table: string;
  /** The column whose value (as text) is the deadline's key. */
  key: string;
}

export class Deadlines {
  /** The time the alarm is armed for (null: none), as this instance knows it; undefined until first needed. */
  #armed: number | null | undefined;

  readonly #earliestSql: string;

  /** `empty`: a fresh object, whose alarm was never set, so there is nothing to read. */
  constructor(
    private readonly sql: SqlStorage,
    private readonly storage: DurableObjectStorage,
    private readonly columns: readonly DueColumn[] = [],
    empty = false,
  ) {
    if (empty) this.#armed = null;
    const mins = [
      "SELECT MIN(due) AS due FROM deadlines",
      ...columns.map((c) => `SELECT MIN(due) AS due FROM ${c.table}`),
    ];
    this.#earliestSql = `SELECT MIN(due) AS due FROM (${mins.join(" UNION ALL ")})`;
  }

  /** Sets (or moves) a deadline. */
  set(kind: string, key: string, due: number): void {
    const armed = this.#armedFor();
    this.sql.exec("INSERT OR REPLACE INTO deadlines (kind,key,due) VALUES (?,?,?)", kind, key, due);
    this.#ringBy(armed, due);
  }

  /** Sets a deadline unless one of that kind and key is already set. */
  ensure(kind: string, key: string, due: number): void {
    // Read first: an INSERT OR IGNORE that is ignored is still a write, and would hold the object's next output.
    if (this.sql.exec("SELECT 1 FROM deadlines WHERE kind=? AND key=?", kind, key).toArray().length > 0) return;
    this.set(kind, key, due);
  }

  /** A row of a DueColumn table is about to get a deadline at `due`: call before writing it. */
  expect(due: number): void {
    this.#ringBy(this.#armedFor(), due);
  }

  clear(kind: string, key: string): void {
    this.sql.exec("DELETE FROM deadlines WHERE kind=? AND key=?", kind, key);
  }

  /**
   * Clears a deadline and moves the alarm to the earliest one left, for the last deadline of a burst of work: the
   * alarm is then not left armed for deadlines cleared during it (a link's handshake), which would wake the object
   * for nothing. The alarm only ever moves later here, which does not wait for the alarm's scheduler.
   */
  settle(kind: string, key: string): void {
    const armed = this.#armedFor();
    this.clear(kind, key);
    const earliest = this.#earliest();
    if (armed === null || (earliest !== null && earliest <= armed)) return;
    this.#armed = earliest;
    this.#point(earliest, "moving the alarm failed");
  }

  /** The alarm rang (the runtime has consumed it): removes and returns every deadline due by `now`, earliest first. */
  takeDue(now: number): DueDeadline[] {
    this.#armed = null;
    const due = this.sql
      .exec<{ kind: string; key: string; due: number }>(
        "DELETE FROM deadlines WHERE due<=? RETURNING kind,key,due",
        now,
      )
      .toArray();
    for (const { kind, table, key } of this.columns) {
      for (const row of this.sql.exec<{ key: SqlStorageValue; due: number }>(
        `SELECT ${key} AS key,due FROM ${table} WHERE due<=?`,
        now,
      )) {
        due.push({ kind, key: String(row.key), due: row.due });
      }
    }
    return due.sort((a, b) => a.due - b.due).map(({ kind, key }) => ({ kind, key }));
  }

  /**
   * Points the alarm at the earliest deadline, or removes it when there is none (after the alarm rang); never
   * before `notBefore` (after a failed handler, whose deadline may still be due).
   */
  rearm(notBefore?: number): void {
    const earliest = this.#earliest();
    const next = earliest === null || notBefore === undefined ? earliest : Math.max(earliest, notBefore);
    if (next === this.#armed) return;
    this.#armed = next;
    this.#point(next, "moving the alarm failed");
  }

  /** The alarm could not do its work (the storage failed): it rings again at `at`, whatever the rows say. */
  retryAt(at: number): void {
    this.#armed = at;
    this.#point(at, "setting the alarm failed");
  }

  /**
   * Points the stored alarm at `at`, or removes it (null). Storage writes are ordered and confirmed before any
   * output leaves the object; no need to await them here.
   */
  #point(at: number | null, failing: string): void {
    (at === null ? this.storage.deleteAlarm() : this.storage.setAlarm(at)).catch((err: unknown) =>
      console.error(failing, err),
    );
  }

  #earliest(): number | null {
    return this.sql.exec<{ due: number | null }>(this.#earliestSql).one().due;
  }

  /** What the alarm is armed for; after an eviction, the earliest row (every change kept the alarm at or before it). */
  #armedFor(): number | null {
    if (this.#armed === undefined) this.#armed = this.#earliest();
    return this.#armed;
  }

  /** Makes the alarm ring by `due` if it is not armed for that or earlier already. */
  #ringBy(armed: number | null, due: number): void {
    if (armed !== null && armed <= due) return;
    this.#armed = due;
    this.#point(due, "setting the alarm failed");
  }
}
