/**
 * The D1 writes the object owes — presence, chats, pending-delete bookkeeping — go through a queue in its own
 * SQLite, so a D1 outage delays them and loses none. Owing a write is one row written in the event that decides it
 * (no D1 round trip on the way: nothing waits for D1); the queue is then worked in the background at once, and by
 * the one alarm after a failure, with a back-off, until every row has landed.
 *
 * Rows are tried in the order they were owed. Each has a key (the thing it is about: the device's presence, one
 * chat); a failed row holds back the later rows of its key — a chat's delete never lands before its creation — and
 * nothing else. Every write must be idempotent: a row whose write landed but whose answer was lost is tried again.
 *
 * A feature declares its writes (`d1Writes`, by kind; made with `d1Write` so the arguments are typed) and owes one
 * with `oweD1`.
 */
import { logFailure } from "./failures";
import type { LinkFeature, LinkRuntime } from "./runtime";
import type { D1Write } from "./d1-write";
import type { SchemaStep } from "./schema-steps";

const STEPS: readonly SchemaStep[] = [
  {
    step: 1,
    run: [
      "CREATE TABLE d1_queue (" +
        "id INTEGER PRIMARY KEY,kind TEXT NOT NULL,key TEXT NOT NULL,args TEXT NOT NULL," +
        "attempts INTEGER NOT NULL DEFAULT 0,not_before INTEGER NOT NULL DEFAULT 0,last_error TEXT," +
        "created_at INTEGER NOT NULL)",
    ],
  },
];

const QUEUE_DEADLINE = "d1-queue";
/** Waits after a failed try, by the number of tries so far (the last one repeats). */
const BACKOFF_MS = [5_000, 30_000, 2 * 60_000, 10 * 60_000] as const;
const backoff = (attempts: number) => BACKOFF_MS[Math.min(attempts, BACKOFF_MS.length) - 1] ?? BACKOFF_MS[0];

interface QueueRow extends Record<string, SqlStorageValue> {
  id: number;
  kind: string;
  key: string;
  args: string;
  attempts: number;
  not_before: number;
}

/** The queue being worked by this instance of the object, if it is. */
const working = new WeakMap<LinkRuntime, Promise<void>>();

/**
 * Owes a write: kept in the object's SQLite with the event that decided it, and tried in the background at once.
 * The arguments are serialised now, so a value that cannot be written fails the event, not the queue.
 */
export function oweD1<A>(rt: LinkRuntime, write: D1Write<A>, key: string, args: A): void {
  rt.sql.exec(
    "INSERT INTO d1_queue (kind,key,args,created_at) VALUES (?,?,?,?)",
    write.kind,
    key,
    JSON.stringify(args),
    Date.now(),
  );
  // The safety net if this instance dies before the write lands; one row for the whole queue.
  rt.deadlines.ensure(QUEUE_DEADLINE, "queue", Date.now() + BACKOFF_MS[1]);
  rt.ctx.waitUntil(workQueue(rt));
}

/**
 * Works the queue now (or joins the work under way); resolves when no row is left that could be written now. Never
 * rejects: a failure of the object's own storage is logged, and the alarm's deadline brings the work back.
 */
export function workQueue(rt: LinkRuntime): Promise<void> {
  let work = working.get(rt);
  if (!work) {
    work = drain(rt)
      .catch((err: unknown) => logFailure(rt, "working the D1 queue", err))
      .finally(() => working.delete(rt));
    working.set(rt, work);
  }
  return work;
}

/** Rows owed and not yet landed (all, or those of one key). */
export function owedCount(rt: LinkRuntime, key?: string): number {
  const where = key === undefined ? "" : " WHERE key = ?";
  return rt.sql
    .exec<{ n: number }>(`SELECT COUNT(*) AS n FROM d1_queue${where}`, ...(key === undefined ? [] : [key]))
    .one().n;
}

/** Tries every row whose back-off is over, in order; a row that fails (or still waits) holds back its key's later rows. */
async function drain(rt: LinkRuntime): Promise<void> {
  const held = new Set<string>();
  let after = 0;
  let retryAt: number | null = null;
  const retryBy = (at: number) => {
    retryAt = Math.min(retryAt ?? at, at);
  };
  for (;;) {
    const row = rt.sql
      .exec<QueueRow>("SELECT id,kind,key,args,attempts,not_before FROM d1_queue WHERE id>? ORDER BY id LIMIT 1", after)
      .toArray()[0];
    if (!row) break;
    after = row.id;
    if (held.has(row.key)) continue;
    if (row.not_before > Date.now()) {
      held.add(row.key);
      retryBy(row.not_before);
      continue;
    }
    const run = rt.registry.d1Writes.get(row.kind) as ((db: D1Database, args: unknown) => Promise<unknown>) | undefined;
    try {
      if (!run) throw new Error(`no feature writes ${row.kind} any more`);
      await run(rt.env.DB, JSON.parse(row.args));
      rt.sql.exec("DELETE FROM d1_queue WHERE id=?", row.id);
    } catch (err) {
      held.add(row.key);
      const attempts = row.attempts + 1;
      const notBefore = Date.now() + backoff(attempts);
      rt.sql.exec(
        "UPDATE d1_queue SET attempts=?,not_before=?,last_error=? WHERE id=?",
        attempts,
        notBefore,
        String(err).slice(0, 500),
        row.id,
      );
      logFailure(rt, `the owed D1 write ${row.kind} (${row.key}, try ${attempts})`, err);
      retryBy(notBefore);
    }
  }
  // The queue done (a link's presence written last, after its handshake's deadline was cleared): the alarm moves on.
  if (retryAt === null) rt.deadlines.settle(QUEUE_DEADLINE, "queue");
  else rt.deadlines.set(QUEUE_DEADLINE, "queue", retryAt);
}

export const d1Queue: LinkFeature = {
  name: "d1-queue",
  after: ["core"],
  migrations: STEPS,
  deadlines: { [QUEUE_DEADLINE]: (rt) => workQueue(rt) },
};
