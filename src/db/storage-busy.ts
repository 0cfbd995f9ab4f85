/**
 * D1 refusing for a moment rather than failing: the database locked by another writer (SQLITE_BUSY) or
 * overloaded. The same request tried again a little later succeeds, so a caller is told that, not "internal error".
 */

const BUSY = /SQLITE_BUSY|database is locked|D1 DB is overloaded/i;

/** How long a caller is asked to wait before trying again (seconds). */
export const STORAGE_RETRY_AFTER_S = 2;

/** Whether the error (or one it was caused by) is D1 being briefly busy. */
export function isStorageBusy(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++)
    if (BUSY.test(e.message)) return true;
  return false;
}
