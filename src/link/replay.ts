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
  `CREATE TABLE IF NOT EXISTS replay_sessions (session_id TEXT PRIMARY KEY, frames INTEGER NOT NULL, bytes INTEGER NOT NULL, dropped INTEGER NOT NULL)`,
];

interface BufferRow extends Record<string, SqlStorageValue> {
  session_id: string;
  frames: number;
  bytes: number;
  dropped: number;
}

/** Forgets a session's buffered frames (its turn ended). */
export function clearReplay(sql: SqlStorage, sessionId: string): void {
  sql.exec("DELETE FROM replay WHERE session_id = ?", sessionId);
  sql.exec("DELETE FROM replay_sessions WHERE session_id = ?", sessionId);
}

/** Keeps one frame of a session, then drops the oldest until the buffer is within its bounds. */
function append(sql: SqlStorage, sessionId: string, frame: string): void {
  const bytes = frameBytes(frame);
  const fits = bytes <= REPLAY_LIMITS.frameBytes;
  sql.exec(
    `INSERT INTO replay_sessions (session_id, frames, bytes, dropped) VALUES (?, ?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET frames = frames + excluded.frames, bytes = bytes + excluded.bytes, dropped = dropped + excluded.dropped`,
    sessionId,
    fits ? 1 : 0,
    fits ? bytes : 0,
    fits ? 0 : 1,
  );
  if (!fits) return;
  sql.exec("INSERT INTO replay (session_id, bytes, frame) VALUES (?, ?, ?)", sessionId, bytes, frame);
  let buffer = sql.exec<BufferRow>("SELECT * FROM replay_sessions WHERE session_id = ?", sessionId).one();
  while (buffer.frames > REPLAY_LIMITS.frames || buffer.bytes > REPLAY_LIMITS.bytes) {
    const oldest = sql
      .exec<{ bytes: number }>("DELETE FROM replay WHERE seq = (SELECT MIN(seq) FROM replay WHERE session_id = ?) RETURNING bytes", sessionId)
      .one();
    buffer = sql
      .exec<BufferRow>(
        "UPDATE replay_sessions SET frames = frames - 1, bytes = bytes - ?, dropped = dropped + 1 WHERE session_id = ? RETURNING *",
        oldest.bytes,
        sessionId,
      )
      .one();
  }
}

/** Keeps a session's notification while one of its turns runs. */
const buffered: DeviceNotificationHandler = {
  fanOut: true,
  handle: (rt, message) => {
    const sessionId = (message.params as { sessionId?: unknown } | undefined)?.sessionId;
    if (typeof sessionId !== "string" || !new TurnStore(rt.sql).isRunning(sessionId)) return;
    append(rt.sql, sessionId, JSON.stringify(message));
  },
};

/** Sends a socket that just attached what it missed of the running turns. */
function catchUp(rt: LinkRuntime, sid: string): void {
  const ws = socketById(rt.ctx, sid);
  if (!ws) return;
  const turns = new TurnStore(rt.sql).running();
  try {
    for (const buffer of rt.sql.exec<BufferRow>("SELECT * FROM replay_sessions ORDER BY session_id").toArray()) {
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
