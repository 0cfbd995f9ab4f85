/**
 * Late joiners. While a session has a running turn (turn-store.ts), its session/update and _lembas/event
 * notifications are kept as they were sent, in a bounded buffer per session: the last REPLAY_LIMITS.frames frames
 * within REPLAY_LIMITS.bytes, the oldest dropped first; a single frame over REPLAY_LIMITS.frameBytes is not kept
 * (it counts as dropped). All buffers together stay within the link cap replay_bytes (limits/config.ts): past it,
 * the oldest frames of the largest buffer go first, so a catch-up never nears the lag after which drain.ts closes
 * the socket, and the busiest turns — the ones a client can least follow frame by frame anyway — pay for it. A
 * socket that attaches mid-turn gets, for each such session, `_instance/replay`
 * { sessionId, turnIds, frames, dropped, lastSeq } — dropped > 0 says frames are missing — then those frames, then
 * the live ones: attaching runs in one event, so no live frame falls between the buffer and the live stream, and
 * none comes twice. The buffer goes when the session's last running turn ends.
 *
 * Numbering. Each of those frames is stamped as it is fanned out with `params._meta.instance.seq` (1, 2, 3 … from
 * the turn's first frame), the same text in the catch-up, so a client sees a gap in what reached it — frames
 * dropped from the buffer, or one not kept — and imports the turn from history instead. `dropped` counts every
 * number before the next live frame that the catch-up does not hold, so frames + dropped is the number the next
 * live frame follows.
 *
 * Reserving. The last frames an object sent before it died with its sockets (a crash) may not have been written, and
 * it cannot know how many went. So numbers are reserved ahead, in storage: each session's `reserved` says numbers up
 * to it may have been used. A batch written carries the last number given plus REPLAY_RESERVE, which at a model's
 * pace (fewer than REPLAY_WRITE_HELD frames between writes) covers every number given before the next write; a
 * number past it reserves the next REPLAY_RESERVE in its own frame's event, unconfirmed, before the frame is sent (a
 * burst). An object that starts with a running turn it did not number itself counts the numbers past what it kept, up
 * to the reservation, as dropped, and goes on after them: the catch-up says what it lost (at most REPLAY_RESERVE
 * more than were sent, as it cannot tell which of the reserved numbers a frame had), with no live frame needed.
 *
 * Writing. Every event that writes must commit before the frames sent after it leave the object, so a row per
 * streamed notification held each next notification back by a commit (about half the fan-out rate during a turn).
 * Kept frames are therefore written together: at most REPLAY_WRITE_WITHIN_MS after the first of them, once
 * REPLAY_WRITE_HELD frames or bytes wait, or sooner, with the next frame that is not a streamed notification (a card,
 * an answer, a client's call: dispatch.ts) or a socket's catch-up. They were already sent to every attached client;
 * what waits in memory is only the late joiners' copy of the last second at most, which an object loses only if it
 * dies within it (the catch-up then counts them as dropped: see Reserving). A second, not a few milliseconds: rows
 * are billed, and a model streaming 50 chunks a second made a row every other chunk.
 *
 * Storing. The buffers are key-value entries, not SQL rows: a batch written on its own (the timer's, or a full one's)
 * is put with `allowUnconfirmed`, which applies it at once but does not hold the object's output for its commit — a
 * SQL write would hold the frames that follow it, which a stream at a model's pace sends within the commit's
 * replication time. The failure accepted: a batch lost with its host within that time, as the frames in memory
 * are (counted as dropped, within the reservation). The frames of one session written together are one entry (rows
 * are billed, frames are not), `replay/<n>` in write order: their texts joined by U+001E, a character no JSON text
 * holds unescaped, with their session, count, size, last number and reservation. An entry is kept under
 * REPLAY_ROW_BYTES (a key and value together may be about 2 MB), counting 3 bytes per UTF-16 unit; a longer batch
 * makes several. Dropping the oldest frames deletes
 * the oldest entries, or rewrites the one they end in. What a session dropped, where its numbering goes on and a
 * reservation no batch carries are in one entry for all sessions, `replay-counts`.
 */
import { DEFAULT_LINK_CAPS, limitsOf } from "../../../limits/config";
import type { InstanceFrameMeta, InstanceReplay } from "../../../protocol/instance";
import { rpcNotification, type NotificationMessage } from "../../../protocol/jsonrpc";
import { frameBytes, withMeta } from "../../runtime/frames";
import { sessionOf } from "../../runtime/forwarding";
import type { LinkRuntime, DeviceNotificationHandler, LinkFeature } from "../../runtime/runtime";
import type { SchemaStep } from "../../runtime/schema-steps";
import { socketById } from "../../runtime/sockets";
import { turnsOf } from "./turn-store";
import { logged, UNCONFIRMED } from "../../runtime/unconfirmed";
import { perObject } from "../../runtime/per-object";

const MiB = 1024 * 1024;
export const REPLAY_LIMITS = { frames: 1000, bytes: 4 * MiB, frameBytes: 1 * MiB } as const;
export const INSTANCE_REPLAY = "_instance/replay";

/** A batch of one session's frames, as stored under `replay/<n>`. */
interface Batch {
  session: string;
  frames: number;
  bytes: number;
  /** The frames' texts, joined by SEPARATOR. */
  texts: string;
  /** The number of the batch's last frame (null: written before frames were numbered). */
  lastSeq: number | null;
  /** Numbers up to this may have been used when the batch was written (absent: written before reserving). */
  reserved?: number;
}

/** What a session dropped, and where its numbering goes on when its batches cannot say (a reset, an unkept tail). */
interface Counts {
  dropped?: number;
  next?: number;
  /** Numbers up to this may have been used (see Reserving). */
  reserved?: number;
}

const BATCHES = "replay/";
const COUNTS = "replay-counts";
/** Zero-padded, so that keys list in write order. */
const batchKey = (n: number) => `${BATCHES}${String(n).padStart(12, "0")}`;

const REPLAY_STEPS: readonly SchemaStep[] = [
  {
    step: 1,
    run: [
      // No index: the table holds only running turns' bounded buffers, and rows are read in seq order.
      `CREATE TABLE IF NOT EXISTS replay_batches (seq INTEGER PRIMARY KEY AUTOINCREMENT,session_id TEXT NOT NULL,frames INTEGER NOT NULL,bytes INTEGER NOT NULL,texts TEXT NOT NULL)`,
      // A row a frame, as objects from before batches kept them (a turn running then loses what it had kept).
      `DROP TABLE IF EXISTS replay`,
      // Written only when a frame is dropped; a buffer's size is counted from its rows (and kept in memory meanwhile).
      `CREATE TABLE IF NOT EXISTS replay_dropped (session_id TEXT PRIMARY KEY,dropped INTEGER NOT NULL)`,
      // Where the counts used to be written with every frame.
      `DROP TABLE IF EXISTS replay_sessions`,
    ],
  },
  {
    step: 2,
    run: [
      // The number of a row's last frame (frames carry their numbers: see numbering below).
      `ALTER TABLE replay_batches ADD COLUMN last_seq INTEGER`,
      // Where a session's numbering goes on when its rows cannot say: after a reset, or a last frame not kept.
      `CREATE TABLE replay_seq (session_id TEXT PRIMARY KEY,next INTEGER NOT NULL)`,
    ],
  },
  {
    step: 3,
    // The buffers move to key-value entries (see Storing above), a running turn's rows and counts with them.
    run: (sql, kv) => {
      let n = 0;
      for (const row of sql.exec<{
        session: string;
        frames: number;
        bytes: number;
        texts: string;
        lastSeq: number | null;
      }>("SELECT session_id AS session,frames,bytes,texts,last_seq AS lastSeq FROM replay_batches ORDER BY seq")) {
        n += 1;
        kv.put<Batch>(batchKey(n), { ...row });
      }
      const counts: Record<string, Counts> = {};
      for (const { session, dropped } of sql.exec<{ session: string; dropped: number }>(
        "SELECT session_id AS session,dropped FROM replay_dropped",
      )) {
        counts[session] = { dropped };
      }
      for (const { session, next } of sql.exec<{ session: string; next: number }>(
        "SELECT session_id AS session,next FROM replay_seq",
      )) {
        counts[session] = { ...counts[session], next };
      }
      if (Object.keys(counts).length > 0) kv.put(COUNTS, counts);
      for (const table of ["replay_batches", "replay_dropped", "replay_seq"]) sql.exec(`DROP TABLE ${table}`);
    },
  },
];

/** The `_meta` member a numbered frame carries: `_meta.instance.seq`. */
export const SEQ_META = "instance";
/** How many numbers past the last one given a session reserves (see Reserving). */
export const REPLAY_RESERVE = 64;

/** How long a kept frame may wait in memory for others to be written with it. */
export const REPLAY_WRITE_WITHIN_MS = 1000;
/** How many frames, or bytes of them, may wait in memory before they are written at once. */
export const REPLAY_WRITE_HELD = { frames: 50, bytes: 1 * MiB } as const;
/** The most a row of frames may hold (a single frame may fill it alone: it is at most REPLAY_LIMITS.frameBytes). */
export const REPLAY_ROW_BYTES = 1 * MiB;
const SEPARATOR = "\u001e";

interface Size {
  frames: number;
  bytes: number;
}

interface Held {
  sessionId: string;
  bytes: number;
  frame: string;
  seq: number;
}

/** Where a stored batch is, and what it holds (its texts stay in storage). */
interface Stored {
  key: string;
  frames: number;
  bytes: number;
  lastSeq: number | null;
  reserved?: number;
}

/** A batch as listed: where it is and its sizes, without its texts. */
const storedOf = (key: string, { frames, bytes, lastSeq, reserved }: Batch): Stored => ({
  key,
  frames,
  bytes,
  lastSeq,
  reserved,
});

/** One object instance's buffers: what is stored (listed once), the sizes, and what is not written yet. */
class Buffers {
  /** Each session's stored batches in order, listed from storage once. */
  #stored: Map<string, Stored[]> | null = null;
  /** The number of the last batch key. */
  #lastKey = 0;
  #counts: Record<string, Counts> | null = null;
  /** Each session's size: its stored batches and held frames. */
  readonly #sizes = new Map<string, Size>();
  /** Each numbered session's next frame number (read from storage once). */
  readonly #next = new Map<string, number>();
  /** Sessions whose last numbered frame was not kept: their next number is written with the next write. */
  readonly #unkeptTail = new Set<string>();
  /** Each numbered session's reservation as written (read from storage once). */
  readonly #reserved = new Map<string, number>();
  /** Sessions whose every number given this object instance knows (it gave them, or recovered them): none lost. */
  readonly #known = new Set<string>();
  #held: Held[] = [];
  #heldBytes = 0;
  readonly #dropped = new Map<string, number>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** The delay the pending timer was set for (0: the held frames are due now). */
  #timerMs: number | null = null;
  /** Whether the next frame that is not a streamed notification will write the held frames (rt.holdWrites). */
  #withFrame = false;
  /** The link cap replay_bytes (read from the environment as frames are kept). */
  #linkBytes: number = DEFAULT_LINK_CAPS.replay_bytes;

  constructor(private readonly storage: DurableObjectStorage) {}

  /**
   * The next frame number of a session, taken: past the session's reservation, the next REPLAY_RESERVE are reserved
   * first, in this event (unconfirmed: it holds no output), so that the number is in storage before its frame leaves.
   */
  number(sessionId: string): number {
    const seq = this.#nextOf(sessionId);
    const past = seq > this.#reservedOf(sessionId);
    this.#next.set(sessionId, seq + 1);
    this.#known.add(sessionId);
    if (past) {
      const counts = this.#allCounts();
      const reserved = seq - 1 + REPLAY_RESERVE;
      this.#reserved.set(sessionId, reserved);
      counts[sessionId] = { ...counts[sessionId], reserved };
      this.#put(COUNTS, counts);
    }
    return seq;
  }

  /** The number the session's last frame got (0: none yet). */
  lastNumber(sessionId: string): number {
    return this.#nextOf(sessionId) - 1;
  }

  /**
   * The object started without the sockets it had (a crash, a reset): for each running turn it did not number
   * itself, the numbers past what it kept, up to the reservation, may have reached clients, so they count as dropped
   * and the numbering goes on after them, with a new reservation (written now, before any frame).
   */
  recover(): void {
    const running = new Set(
      turnsOf(this.storage.sql)
        .running()
        .map((t) => t.sessionId),
    );
    const counts = this.#allCounts();
    let lost = false;
    for (const sessionId of running) {
      if (this.#known.has(sessionId)) continue;
      this.#known.add(sessionId);
      const kept = this.lastNumber(sessionId);
      const reserved = this.#reservedOf(sessionId);
      if (reserved <= kept) continue;
      const next = reserved + 1;
      this.#next.set(sessionId, next);
      this.#reserved.set(sessionId, reserved + REPLAY_RESERVE);
      const dropped = (counts[sessionId]?.dropped ?? 0) + reserved - kept;
      counts[sessionId] = { dropped, next, reserved: reserved + REPLAY_RESERVE };
      lost = true;
    }
    if (lost) this.storage.kv.put(COUNTS, counts);
  }

  /** Keeps one frame of a session, numbered `seq` (written soon; see the top of this file). */
  keep(rt: LinkRuntime, sessionId: string, frame: string, seq: number): void {
    this.#linkBytes = limitsOf(rt.env).caps.replay_bytes;
    const bytes = frameBytes(frame);
    if (bytes > REPLAY_LIMITS.frameBytes) {
      this.#dropped.set(sessionId, (this.#dropped.get(sessionId) ?? 0) + 1);
      this.#unkeptTail.add(sessionId);
    } else {
      this.#unkeptTail.delete(sessionId);
      this.#held.push({ sessionId, bytes, frame, seq });
      this.#heldBytes += bytes;
      const size = this.#size(sessionId);
      size.frames += 1;
      size.bytes += bytes;
    }
    if (!this.#withFrame) {
      this.#withFrame = true;
      rt.holdWrites(() => {
        this.#withFrame = false;
        this.write();
      });
    }
    // Written in an event of its own, as the timer writes: a write in this frame's event would hold whatever is
    // sent after it in the same turn of the event loop (the next frames of a burst) until its commit.
    const full = this.#held.length >= REPLAY_WRITE_HELD.frames || this.#heldBytes >= REPLAY_WRITE_HELD.bytes;
    if (full && this.#timerMs !== 0) this.#writeIn(0);
    else if (this.#timer === null) this.#writeIn(REPLAY_WRITE_WITHIN_MS);
  }

  #writeIn(ms: number): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.write(), ms);
    this.#timerMs = ms;
  }

  /**
   * Writes the held frames, drops the oldest of every buffer over its bounds, and counts what was dropped — all
   * with `allowUnconfirmed`, so that a write in an event of its own holds no output.
   */
  write(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerMs = null;
    const held = this.#held;
    this.#held = [];
    this.#heldBytes = 0;
    const stored = this.#allStored();
    const unreserved = new Set<string>();
    for (const sessionId of new Set(held.map((h) => h.sessionId))) {
      const batches = stored.get(sessionId) ?? [];
      stored.set(sessionId, batches);
      const reserved = Math.max(this.#reservedOf(sessionId), this.lastNumber(sessionId) + REPLAY_RESERVE);
      this.#reserved.set(sessionId, reserved);
      for (const row of rows(held.filter((h) => h.sessionId === sessionId))) {
        this.#lastKey += 1;
        const key = batchKey(this.#lastKey);
        const batch: Batch = {
          session: sessionId,
          frames: row.length,
          bytes: row.reduce((sum, h) => sum + h.bytes, 0),
          texts: row.map((h) => h.frame).join(SEPARATOR),
          lastSeq: row.at(-1)?.seq ?? null,
          reserved,
        };
        this.#put(key, batch);
        batches.push(storedOf(key, batch));
      }
      this.#trim(sessionId, (size) => size.frames > REPLAY_LIMITS.frames || size.bytes > REPLAY_LIMITS.bytes);
    }
    if (held.length > 0) this.#trimLink();
    // A reservation whose batch a bound dropped at once is kept with the counts instead.
    for (const [sessionId, reserved] of this.#reserved)
      if (
        (stored.get(sessionId)?.at(-1)?.reserved ?? 0) < reserved &&
        this.#allCounts()[sessionId]?.reserved !== reserved
      )
        unreserved.add(sessionId);
    if (this.#dropped.size === 0 && this.#unkeptTail.size === 0 && unreserved.size === 0) return;
    const counts = this.#allCounts();
    for (const [sessionId, dropped] of this.#dropped) {
      counts[sessionId] = { ...counts[sessionId], dropped: (counts[sessionId]?.dropped ?? 0) + dropped };
    }
    this.#dropped.clear();
    for (const sessionId of this.#unkeptTail)
      counts[sessionId] = { ...counts[sessionId], next: this.#nextOf(sessionId) };
    this.#unkeptTail.clear();
    for (const sessionId of unreserved)
      counts[sessionId] = { ...counts[sessionId], reserved: this.#reserved.get(sessionId) };
    this.#put(COUNTS, counts);
  }

  /** Forgets a session's buffer (its turn ended), written or not. */
  forget(sessionId: string): void {
    this.#held = this.#held.filter((h) => h.sessionId !== sessionId);
    this.#heldBytes = this.#held.reduce((sum, h) => sum + h.bytes, 0);
    this.#dropped.delete(sessionId);
    this.#sizes.delete(sessionId);
    this.#next.delete(sessionId);
    this.#unkeptTail.delete(sessionId);
    this.#reserved.delete(sessionId);
    this.#known.delete(sessionId);
    const stored = this.#allStored();
    for (const { key } of stored.get(sessionId) ?? []) this.storage.kv.delete(key);
    stored.delete(sessionId);
    const counts = this.#allCounts();
    if (counts[sessionId] === undefined) return;
    delete counts[sessionId];
    if (Object.keys(counts).length > 0) this.storage.kv.put(COUNTS, counts);
    else this.storage.kv.delete(COUNTS);
  }

  /** What a late joiner is sent of a session: its counts, and its frames in order. */
  kept(sessionId: string): { frames: number; lastSeq: number; dropped: number; texts: string[] } {
    const batches = this.#allStored().get(sessionId) ?? [];
    const texts = batches.flatMap(({ key }) => this.storage.kv.get<Batch>(key)?.texts.split(SEPARATOR) ?? []);
    return {
      frames: batches.reduce((sum, b) => sum + b.frames, 0),
      lastSeq: batches.reduce((last, b) => Math.max(last, b.lastSeq ?? 0), 0),
      dropped: this.#allCounts()[sessionId]?.dropped ?? 0,
      texts,
    };
  }

  /** A write that holds no output (see Storing); a failure is logged, as the timer has no caller to tell. */
  #put<T>(key: string, value: T): void {
    this.storage.put(key, value, UNCONFIRMED).catch(logged("keeping frames"));
  }

  #delete(key: string): void {
    this.storage.delete(key, UNCONFIRMED).catch(logged("dropping kept frames"));
  }

  /** Every session's stored batches, listed once: their texts are read now and then left to storage. */
  #allStored(): Map<string, Stored[]> {
    if (this.#stored === null) {
      const stored = new Map<string, Stored[]>();
      for (const [key, batch] of this.storage.kv.list<Batch>({ prefix: BATCHES })) {
        const batches = stored.get(batch.session) ?? [];
        batches.push(storedOf(key, batch));
        stored.set(batch.session, batches);
        this.#lastKey = Number(key.slice(BATCHES.length));
      }
      this.#stored = stored;
    }
    return this.#stored;
  }

  #allCounts(): Record<string, Counts> {
    this.#counts ??= this.storage.kv.get<Record<string, Counts>>(COUNTS) ?? {};
    return this.#counts;
  }

  #nextOf(sessionId: string): number {
    let next = this.#next.get(sessionId);
    if (next === undefined) {
      const stored = this.#allStored().get(sessionId) ?? [];
      next = Math.max(1, ...stored.map((b) => (b.lastSeq ?? 0) + 1), this.#allCounts()[sessionId]?.next ?? 1);
      this.#next.set(sessionId, next);
    }
    return next;
  }

  /** Numbers up to this may have been used, as storage says (none past the last kept when nothing was reserved). */
  #reservedOf(sessionId: string): number {
    let reserved = this.#reserved.get(sessionId);
    if (reserved === undefined) {
      const stored = this.#allStored().get(sessionId) ?? [];
      reserved = Math.max(
        this.lastNumber(sessionId),
        ...stored.map((b) => b.reserved ?? 0),
        this.#allCounts()[sessionId]?.reserved ?? 0,
      );
      this.#reserved.set(sessionId, reserved);
    }
    return reserved;
  }

  #size(sessionId: string): Size {
    let size = this.#sizes.get(sessionId);
    if (!size) {
      const stored = this.#allStored().get(sessionId) ?? [];
      size = {
        frames: stored.reduce((sum, b) => sum + b.frames, 0),
        bytes: stored.reduce((sum, b) => sum + b.bytes, 0),
      };
      this.#sizes.set(sessionId, size);
    }
    return size;
  }

  /** While all buffers together are over the link's bound, drops the oldest frames of the largest (written) one. */
  #trimLink(): void {
    const sizes = new Map([...this.#allStored().keys()].map((sessionId) => [sessionId, this.#size(sessionId)]));
    const total = () => [...sizes.values()].reduce((sum, size) => sum + size.bytes, 0);
    while (total() > this.#linkBytes) {
      const [largest, next] = [...sizes].sort(([, a], [, b]) => b.bytes - a.bytes);
      const floor = next?.[1].bytes ?? 0;
      // Down to the next largest at most, which is then the one to cut: the largest buffers shrink together.
      this.#trim(largest![0], (size) => total() > this.#linkBytes && size.bytes >= floor);
    }
  }

  /** Drops the oldest frames of a session while it is `over` a bound: whole batches, then the first frames of one. */
  #trim(sessionId: string, over: (size: Size) => boolean): void {
    const size = this.#size(sessionId);
    const batches = this.#allStored().get(sessionId) ?? [];
    while (over(size)) {
      const oldest = batches[0]!;
      const batch = this.storage.kv.get<Batch>(oldest.key)!;
      const texts = batch.texts.split(SEPARATOR);
      let gone = 0;
      while (gone < texts.length && over(size)) {
        size.frames -= 1;
        size.bytes -= frameBytes(texts[gone] as string);
        gone += 1;
      }
      this.#dropped.set(sessionId, (this.#dropped.get(sessionId) ?? 0) + gone);
      if (gone === texts.length) {
        this.#delete(oldest.key);
        batches.shift();
      } else {
        const kept = texts.slice(gone);
        oldest.frames = kept.length;
        oldest.bytes = kept.reduce((sum, text) => sum + frameBytes(text), 0);
        this.#put<Batch>(oldest.key, {
          ...batch,
          frames: oldest.frames,
          bytes: oldest.bytes,
          texts: kept.join(SEPARATOR),
        });
      }
    }
  }
}

/** A session's held frames, in order, cut into rows of at most REPLAY_ROW_BYTES (3 bytes a UTF-16 unit at most). */
function rows(held: Held[]): Held[][] {
  const out: Held[][] = [];
  let units = 0;
  for (const h of held) {
    const row = out.at(-1);
    if (row && (units + SEPARATOR.length + h.frame.length) * 3 <= REPLAY_ROW_BYTES) {
      row.push(h);
      units += SEPARATOR.length + h.frame.length;
    } else {
      out.push([h]);
      units = h.frame.length;
    }
  }
  return out;
}

/** The buffers of each object instance, by its storage. */
const buffersOf = perObject((storage: DurableObjectStorage) => new Buffers(storage));

/** The frames of a session's running turns written so far, and how many were dropped (kept.ts rebuilds a turn). */
export function writtenFrames(storage: DurableObjectStorage, sessionId: string): { texts: string[]; dropped: number } {
  const { texts, dropped } = buffersOf(storage).kept(sessionId);
  return { texts, dropped };
}

/** Forgets a session's buffered frames (its turn ended). */
export function clearReplay(storage: DurableObjectStorage, sessionId: string): void {
  buffersOf(storage).forget(sessionId);
}

/** A device task start event: the turn it starts opens only once the frame is out (turns.ts), yet it is numbered. */
const startsTask = (message: NotificationMessage) => {
  const event = (message.params as { event?: { type?: unknown; state?: unknown } } | undefined)?.event;
  return message.method === "_lembas/event" && event?.type === "task" && event.state === "start";
};

/** Numbers a session's frames while one of its turns runs, and keeps them for late joiners. */
const buffered: DeviceNotificationHandler = {
  fanOut: true,
  stamp: (rt, message, text, paramsAt) => {
    const sessionId = sessionOf(message.params);
    if (sessionId === null || !(startsTask(message) || turnsOf(rt.sql).isRunning(sessionId))) return text;
    const meta: InstanceFrameMeta = { seq: buffersOf(rt.ctx.storage).number(sessionId) };
    return withMeta(text, paramsAt, message, { [SEQ_META]: meta });
  },
  handle: (rt, message, text) => {
    const sessionId = sessionOf(message.params);
    if (sessionId === null || !turnsOf(rt.sql).isRunning(sessionId)) return;
    const buffers = buffersOf(rt.ctx.storage);
    buffers.keep(rt, sessionId, text, buffers.lastNumber(sessionId));
  },
};

/**
 * Sends a socket that just attached what it missed of the running turns: for each session with one, _instance/replay
 * (lastSeq: the number of the last frame kept, 0 when none is), then the frames kept.
 */
function catchUp(rt: LinkRuntime, sid: string): void {
  const ws = socketById(rt.ctx, sid);
  if (!ws) return;
  const buffers = buffersOf(rt.ctx.storage);
  buffers.write();
  const turns = turnsOf(rt.sql).running();
  for (const sessionId of [...new Set(turns.map((t) => t.sessionId))].sort()) {
    const { texts, ...kept } = buffers.kept(sessionId);
    const turnIds = turns.filter((t) => t.sessionId === sessionId).map((t) => t.turnId);
    const notice: InstanceReplay = { sessionId, turnIds, ...kept };
    rt.deliver(ws, JSON.stringify(rpcNotification(INSTANCE_REPLAY, notice)));
    for (const frame of texts) rt.deliver(ws, frame);
  }
}

export const replay: LinkFeature = {
  name: "replay",
  // A task start must open its turn (turns) before its own frame is kept.
  after: ["turns"],
  migrations: REPLAY_STEPS,
  // The buffers are key-value entries (step 3): a fresh object has no replay table at all.
  fresh: [],
  deviceNotifications: { "session/update": buffered, "_lembas/event": buffered },
  onClientAttached: (rt, peer) => catchUp(rt, peer.sid),
  // A link that vanished with the object's sockets (a crash, a reset): frames sent just before may not have been
  // kept, and the catch-up counts them as dropped.
  onLinkDown: (rt, _link, reason) => {
    if (reason === "lost") buffersOf(rt.ctx.storage).recover();
  },
};
