/**
 * Counts the storage commits of the device objects, and which of them held output back — the figure that carries
 * to production, where a commit is confirmed only once replicated.
 *
 * What the runtime does (workerd's ActorSqlite and OutputGate): every SQL statement that is not read-only — any
 * INSERT, UPDATE, DELETE, CREATE, DROP, even one that changes nothing — and every storage write made without
 * `allowUnconfirmed` (put, delete, setAlarm, …) joins the object's open implicit transaction or opens one, and locks
 * the object's output gate until that transaction is committed and confirmed. The transaction commits on the next
 * turn of the event loop, so it gathers every write of the same JavaScript turn. A socket send or close, an HTTP
 * response, a subrequest (a D1 query too) waits for every lock taken before it was issued; what was issued before
 * the write is not held.
 *
 * Counted here, per object: a commit's window opens at its first confirmed write and ends when `storage.sync()`
 * resolves (the commit done and the gate open again). An output issued in the window waited for that commit: the
 * commit is "holding". Counting is off unless the bench turns it on (POST /api/__bench/commits/start), and the
 * runtime's methods are watched only while it counts: during the timed measurements they are the runtime's own, so
 * the relay pays nothing for being watched that the bare baseline does not. Locally a commit is confirmed within the same event-loop turn, so
 * a holding commit counted here holds output everywhere; in production a commit's window is longer (replication), so
 * a commit counted as holding nothing can still hold an output issued within its replication time.
 */
import type { CommitTally } from "../commit-tally";

/** One object instance's open commit window. */
export interface ObjectLedger {
  storage: DurableObjectStorage;
  ctx: DurableObjectState;
  window: { writes: Set<string>; held: Map<string, number> } | null;
}

let counting = false;
let tally: CommitTally = empty();
let cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
/** Sockets seen through an object's state while counting, and the object they belong to. */
const owners = new WeakMap<WebSocket, ObjectLedger>();

function empty(): CommitTally {
  return { commits: 0, holding: 0, heldOutputs: 0, writes: 0, rowsWritten: 0, shapes: {} };
}

export function startCounting(): void {
  tally = empty();
  cursors = [];
  counting = true;
  for (const patch of patches) patch.install();
}

/** Stops counting and returns what was counted (commits still in their window are counted, their holds so far). */
export function stopCounting(): CommitTally {
  counting = false;
  for (const patch of patches) patch.restore();
  const rows = cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0);
  cursors = [];
  return { ...tally, rowsWritten: tally.rowsWritten + rows };
}

function wrote(ledger: ObjectLedger, what: string): void {
  if (!counting) return;
  tally.writes++;
  if (!ledger.window) {
    const window = { writes: new Set<string>(), held: new Map<string, number>() };
    ledger.window = window;
    tally.commits++;
    const close = () => {
      if (ledger.window === window) ledger.window = null;
      const held = [...window.held.values()].reduce((a, b) => a + b, 0);
      if (held > 0) tally.holding++;
      tally.heldOutputs += held;
      const outputs = [...window.held].map(([kind, n]) => `${n} ${kind}`).join(", ") || "nothing";
      const shape = `${[...window.writes].join(" + ")} ⇒ held ${outputs}`;
      tally.shapes[shape] = (tally.shapes[shape] ?? 0) + 1;
    };
    ledger.storage.sync().then(close, close);
  }
  ledger.window.writes.add(what);
}

/** An output of the object (socket send or close, HTTP response, D1 query): held if a commit window is open. */
export function output(ledger: ObjectLedger, kind: string): void {
  if (!counting || !ledger.window) return;
  ledger.window.held.set(kind, (ledger.window.held.get(kind) ?? 0) + 1);
}

/** A socket handed to the object by the runtime (an event's argument) is the object's. */
export function adopt(ws: WebSocket, ledger: ObjectLedger): void {
  if (counting) owners.set(ws, ledger);
}

/** Each object's state, storage and SQL handle → its ledger (the runtime's methods are watched on their prototypes). */
const ledgers = new WeakMap<object, ObjectLedger>();

/**
 * Watches an object's storage writes and the sockets it reaches. Call before the object's constructor runs, so its
 * own writes are seen. The runtime's classes are patched once, on their prototypes: the base class of a Durable
 * Object accepts only the runtime's own state object, so nothing can stand in front of it.
 */
export function watch(ctx: DurableObjectState): ObjectLedger {
  const ledger: ObjectLedger = { storage: ctx.storage, ctx, window: null };
  for (const handle of [ctx, ctx.storage, ctx.storage.sql, ctx.storage.kv]) ledgers.set(handle, ledger);
  patchRuntime(ctx);
  return ledger;
}

type Method = (this: object, ...args: unknown[]) => unknown;

/** The runtime's methods to watch while counting: each installed by startCounting, restored by stopCounting. */
const patches: { install(): void; restore(): void }[] = [];

/** Makes `proto[name]` go through `wrapper` (given the receiver, the arguments and the original) while counting. */
function around(
  proto: object,
  name: string,
  wrapper: (self: object, args: unknown[], call: () => unknown) => unknown,
): void {
  const original = Reflect.get(proto, name) as Method;
  const set = (value: Method) => Object.defineProperty(proto, name, { configurable: true, writable: true, value });
  const patch = {
    install: () =>
      set(function (this: object, ...args: unknown[]) {
        return wrapper(this, args, () => original.apply(this, args));
      }),
    restore: () => set(original),
  };
  patches.push(patch);
  if (counting) patch.install();
}

const short = (sql: string) => sql.replace(/\s+/g, " ").trim().slice(0, 70);
/** What sqlite3_stmt_readonly() calls a write, for the statements this code base runs. */
const WRITE_SQL = /^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b/i;
/**
 * transactionSync is one too, whatever its callback does: it tells the storage of a write before its first
 * statement (workerd `DurableObjectStorage::transactionSync`: "SAVEPOINT is a readonly statement, but we need to
 * trigger an outer TRANSACTION" → `notifyWrite()`), so even an empty or rolled-back one locks the gate.
 */
const STORAGE_WRITES = ["put", "delete", "deleteAll", "setAlarm", "deleteAlarm", "transactionSync"] as const;

let patched = false;
function patchRuntime(ctx: DurableObjectState): void {
  if (patched) return;
  patched = true;
  around(Object.getPrototypeOf(ctx.storage.sql) as object, "exec", (self, args, call) => {
    const cursor = call() as SqlStorageCursor<Record<string, SqlStorageValue>>;
    const ledger = ledgers.get(self);
    if (counting && ledger && WRITE_SQL.test(String(args[0]))) {
      wrote(ledger, short(String(args[0])));
      cursors.push(cursor);
    }
    return cursor;
  });
  for (const name of STORAGE_WRITES) {
    around(Object.getPrototypeOf(ctx.storage) as object, name, (self, args, call) => {
      const ledger = ledgers.get(self);
      if (!counting || !ledger) return call();
      const options = args.at(-1) as { allowUnconfirmed?: boolean } | undefined;
      // An unconfirmed write opens no commit window that output waits for, but its rows are billed all the same.
      if (!(typeof options === "object" && options?.allowUnconfirmed)) wrote(ledger, `storage.${name}()`);
      if (name === "setAlarm" || name === "deleteAlarm") tally.rowsWritten++;
      if (name === "put" || name === "delete") tally.rowsWritten += keysOf(args[0]);
      return call();
    });
  }
  // The synchronous key-value API (ctx.storage.kv): every write confirmed, a row a key.
  for (const name of ["put", "delete"] as const) {
    around(Object.getPrototypeOf(ctx.storage.kv) as object, name, (self, _args, call) => {
      const ledger = ledgers.get(self);
      if (counting && ledger) {
        wrote(ledger, `storage.kv.${name}()`);
        tally.rowsWritten++;
      }
      return call();
    });
  }
  const state = Object.getPrototypeOf(ctx) as object;
  around(state, "getWebSockets", (self, _args, call) => {
    const sockets = call() as WebSocket[];
    const ledger = ledgers.get(self);
    if (counting && ledger) for (const ws of sockets) owners.set(ws, ledger);
    return sockets;
  });
  around(state, "acceptWebSocket", (self, args, call) => {
    const ledger = ledgers.get(self);
    if (ledger) adopt(args[0] as WebSocket, ledger);
    return call();
  });
  // Every socket send and close of the isolate: only an object's own sockets, while counting, are looked at.
  for (const name of ["send", "close"] as const) {
    around(WebSocket.prototype, name, (self, _args, call) => {
      const ledger = counting ? owners.get(self as WebSocket) : undefined;
      if (ledger?.window) output(ledger, `${name} to ${roleOf(ledger, self as WebSocket)}`);
      return call();
    });
  }
}

/** How many keys a key-value put or delete names: one key, an array of them, or an object of entries. */
function keysOf(first: unknown): number {
  if (typeof first === "string") return 1;
  return Array.isArray(first) ? first.length : Object.keys(first as object).length;
}

/** A socket's role tag ("device" or "client"), to say what was held. */
function roleOf(ledger: ObjectLedger, ws: WebSocket): string {
  try {
    return ledger.ctx.getTags(ws).find((tag) => tag === "device" || tag === "client") ?? "socket";
  } catch {
    return "socket";
  }
}
