/**
 * Late joiners. While a session has a running turn (turn-store.ts), its session/update and _lembas/event
 * notifications are kept as they were sent, in a bounded buffer per session: the last REPLAY_LIMITS.frames frames
 * within REPLAY_LIMITS.bytes, the oldest dropped first; a single frame over REPLAY_LIMITS.frameBytes is not kept
 * (it counts as dropped). A socket that attaches mid-turn gets, for each such session, `instance/replay`
 * { sessionId, turnIds, frames, dropped } — dropped > 0 says the oldest frames are missing — then those frames, then
 * the live ones: attaching runs in one event, so no live frame falls between the buffer and the live stream, and
 * none comes twice. The buffer goes when the session's last running turn ends.
 */
import { rpcNotification } from "../protocol/jsonrpc";
import type { DeviceNotificationHandler, LinkFeature } from "./feature";
import { frameBytes } from "./frames";
import type { LinkRuntime } from "./runtime";
import { socketById } from "./sockets";
import { TurnStore } from "./turn-store";

const MiB = 1024 * 1024;
export const REPLAY_LIMITS = { frames: 1000, bytes: 4 * MiB, frameBytes: 1 * MiB } as const;
export const INSTANCE_REPLAY = "instance/replay";

const REPLAY_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS replay (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, bytes INTEGER NOT NULL, frame TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS replay_session ON replay (session_id, seq)`,
  // Written only when a frame is dropped; a buffer's size is counted from its rows (and kept in memory meanwhile).
  `CREATE TABLE IF NOT EXISTS replay_dropped (session_id TEXT PRIMARY KEY, dropped INTEGER NOT NULL)`,
  // Where the counts used to be written with every frame.
  `DROP TABLE IF EXISTS replay_sessions`,
];

interface Size {
  frames: number;
  bytes: number;
}

/**
 * Each buffer's size, by session, for this object instance (keyed by its storage): read from the rows once, then
 * kept up to date here, so keeping a frame writes its row and nothing else.
 */
const sizes = new WeakMap<SqlStorage, Map<string, Size>>();

function sizeOf(sql: SqlStorage, sessionId: string): Size {
  let bySession = sizes.get(sql);
  if (!bySession) sizes.set(sql, (bySession = new Map()));
  let size = bySession.get(sessionId);
  if (!size) {
    size = sql.exec<{ frames: number; bytes: number }>("SELECT COUNT(*) AS frames, COALESCE(SUM(bytes), 0) AS bytes FROM replay WHERE session_id = ?", sessionId).one();
    bySession.set(sessionId, size);
  }
  return size;
}

function countDropped(sql: SqlStorage, sessionId: string, dropped: number): void {
  sql.exec(
    "INSERT INTO replay_dropped (session_id, dropped) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET dropped = dropped + excluded.dropped",
    sessionId,
    dropped,
  );
}

/** Forgets a session's buffered frames (its turn ended). */
export function clearReplay(sql: SqlStorage, sessionId: string): void {
  sql.exec("DELETE FROM replay WHERE session_id = ?", sessionId);
  sql.exec("DELETE FROM replay_dropped WHERE session_id = ?", sessionId);
  sizes.get(sql)?.delete(sessionId);
}

/** Keeps one frame of a session, then drops the oldest until the buffer is within its bounds. */
function append(sql: SqlStorage, sessionId: string, frame: string): void {
  const bytes = frameBytes(frame);
  if (bytes > REPLAY_LIMITS.frameBytes) return countDropped(sql, sessionId, 1);
  const size = sizeOf(sql, sessionId);
  sql.exec("INSERT INTO replay (session_id, bytes, frame) VALUES (?, ?, ?)", sessionId, bytes, frame);
  size.frames += 1;
  size.bytes += bytes;
  let dropped = 0;
  while (size.frames > REPLAY_LIMITS.frames || size.bytes > REPLAY_LIMITS.bytes) {
    const oldest = sql
      .exec<{ bytes: number }>("DELETE FROM replay WHERE seq = (SELECT MIN(seq) FROM replay WHERE session_id = ?) RETURNING bytes", sessionId)
      .one();
    size.frames -= 1;
    size.bytes -= oldest.bytes;
    dropped += 1;
  }
  if (dropped > 0) countDropped(sql, sessionId, dropped);
}

/** Keeps a session's notification while one of its turns runs. */
const buffered: DeviceNotificationHandler = {
  fanOut: true,
  handle: (rt, message, text) => {
    const sessionId = (message.params as { sessionId?: unknown } | undefined)?.sessionId;
    if (typeof sessionId !== "string" || !new TurnStore(rt.sql).isRunning(sessionId)) return;
    append(rt.sql, sessionId, text);
  },
};

/** Sends a socket that just attached what it missed of the running turns. */
function catchUp(rt: LinkRuntime, sid: string): void {
  const ws = socketById(rt.ctx, sid);
  if (!ws) return;
  const turns = new TurnStore(rt.sql).running();
  try {
    const buffers = rt.sql.exec<{ session_id: string; frames: number; dropped: number }>(
      `SELECT session_id, SUM(frames) AS frames, SUM(dropped) AS dropped FROM (
         SELECT session_id, COUNT(*) AS frames, 0 AS dropped FROM replay GROUP BY session_id
         UNION ALL SELECT session_id, 0, dropped FROM replay_dropped)
       GROUP BY session_id ORDER BY session_id`,
    );
    for (const buffer of buffers.toArray()) {
      const turnIds = turns.filter((t) => t.sessionId === buffer.session_id).map((t) => t.turnId);
      if (turnIds.length === 0) continue;
      ws.send(JSON.stringify(rpcNotification(INSTANCE_REPLAY, { sessionId: buffer.session_id, turnIds, frames: buffer.frames, dropped: buffer.dropped })));
      for (const { frame } of rt.sql.exec<{ frame: string }>("SELECT frame FROM replay WHERE session_id = ? ORDER BY seq", buffer.session_id)) {
        ws.send(frame);
      }
    }
  } catch {
    // The socket closed while catching up; its close event follows.
  }
}

export const replay: LinkFeature = {
  name: "replay",
  schema: REPLAY_SCHEMA,
  deviceNotifications: { "session/update": buffered, "_lembas/event": buffered },
  onClientAttached: (rt, peer) => catchUp(rt, peer.sid),
};
