/** What the instrumented Worker counted of its objects' storage commits (bench/instrumented/commit-ledger.ts). */
export interface CommitTally {
  /** Commits: windows from a confirmed write to its confirmation. */
  commits: number;
  /** Commits during whose window at least one output was issued (and so waited for it). */
  holding: number;
  /** Outputs that waited for a commit. */
  heldOutputs: number;
  /** Statements and storage calls that wrote (each opens or joins a commit). */
  writes: number;
  /** SQLite rows written, as billed (cursor.rowsWritten; each setAlarm/deleteAlarm counts as one row). */
  rowsWritten: number;
  /** "<writes> ⇒ <outputs held>" → commits of that shape: where each commit comes from, for the plan. */
  shapes: Record<string, number>;
}
