/**
 * One alarm for every deadline of the object. Deadlines are rows (kind, key, due); after each change the alarm is
 * set to the earliest one. When it fires, every due row is removed and handed to the handler its kind registered
 * (handshake timeouts, request timeouts, the heartbeat sweep, and whatever features add).
 */
export const DEADLINES_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS deadlines (kind TEXT NOT NULL, key TEXT NOT NULL, due INTEGER NOT NULL, PRIMARY KEY (kind, key))`,
];

export interface DueDeadline {
  kind: string;
  key: string;
}

export class Deadlines {
  constructor(
    private readonly sql: SqlStorage,
    private readonly storage: DurableObjectStorage,
  ) {}

  /** Sets (or moves) a deadline. */
  set(kind: string, key: string, due: number): void {
    this.sql.exec("INSERT OR REPLACE INTO deadlines (kind, key, due) VALUES (?, ?, ?)", kind, key, due);
    this.rearm();
  }

  /** Sets a deadline unless one of that kind and key is already set. */
  ensure(kind: string, key: string, due: number): void {
    this.sql.exec("INSERT OR IGNORE INTO deadlines (kind, key, due) VALUES (?, ?, ?)", kind, key, due);
    this.rearm();
  }

  clear(kind: string, key: string): void {
    this.sql.exec("DELETE FROM deadlines WHERE kind = ? AND key = ?", kind, key);
    this.rearm();
  }

  /** Removes and returns every deadline due by `now`, earliest first. */
  takeDue(now: number): DueDeadline[] {
    const due = this.sql.exec<{ kind: string; key: string; due: number }>("DELETE FROM deadlines WHERE due <= ? RETURNING kind, key, due", now).toArray();
    return due.sort((a, b) => a.due - b.due).map(({ kind, key }) => ({ kind, key }));
  }

  /** Points the alarm at the earliest deadline, or removes it when there is none. */
  rearm(): void {
    const next = this.sql.exec<{ due: number | null }>("SELECT MIN(due) AS due FROM deadlines").one().due;
    // Storage writes are ordered and confirmed before any output leaves the object; no need to await them here.
    void (next === null ? this.storage.deleteAlarm() : this.storage.setAlarm(next));
  }
}
