/**
 * The baseline the benchmark measures the relay against: the least a Durable Object can do to relay between
 * sockets with the same Hibernation API. `/a/<room>` and `/b/<room>` accept a socket into the room's object; a frame
 * from an "a" socket goes to every "b" socket, a frame from a "b" socket to every "a" socket — as it came, with no
 * parsing, validation, storage or alarm. With one socket on each side that is a bare echo (client ↔ device); with
 * many "a" sockets, a bare broadcast. `GET /counters` says how many times a room object was constructed (an evicted
 * object is constructed again by its next event), the same count the instrumented real Worker keeps.
 *
 * `/link/<room>` is a "b" socket that first does the least a link's opening can do — the spec's round trip, with
 * nothing read, checked or stored: the socket's first frame (standing for `_lembas/hello`) is answered with one
 * fixed frame (standing for `initialize`); its next frame (the answer) sends one fixed frame to every "a" socket
 * (standing for `_instance/link` up); from then on it relays as any "b" socket. Where it is in that exchange is kept
 * in the socket's attachment (memory, no storage), so a wake-up does not restart it.
 */
import { DurableObject } from "cloudflare:workers";

interface Env {
  ROOM: DurableObjectNamespace<BareRoom>;
  /** A local D1 for the D1 experiments only; the baseline itself never touches it. */
  DB: D1Database;
  /**
   * Bench-only experiments (bench/idle-memory.ts): a link's opening also writes one row to the object's SQLite
   * storage ("sql"), one key ("kv"), or sets an alarm an hour away ("alarm") — one thing the relay's link does;
   * or ("heavy") writes 1 MiB in 256 rows, so the object holds about as much memory while in memory as a DeviceLink.
   * The D1 ones take the relay's path into the object: the Worker reads the room's row before passing the upgrade
   * on, as the relay reads a device's credential ("d1-read"); the object writes the row once the link is up, off
   * the output path, as the relay writes a device's presence ("d1-write"); or both ("d1-both"). `POST /seed/<n>`
   * makes the rows of rooms idle-0 … idle-<n-1> first.
   */
  STORAGE?: ObjectStep | D1Step;
}

type ObjectStep = "sql" | "kv" | "alarm" | "heavy";
type D1Step = "d1-read" | "d1-write" | "d1-both";
const isD1 = (step: ObjectStep | D1Step): step is D1Step => step.startsWith("d1");

type Side = "a" | "b";
let constructions = 0;
const other = (side: Side): Side => (side === "a" ? "b" : "a");
/** The tag of a "b" socket that opens with the handshake; its attachment counts the frames of it seen so far. */
const LINK = "link";
/** Shaped as the real link's frames (the real `_instance/link` up also carries the link's facts). */
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: 1,
    clientCapabilities: { _meta: { lembas: { protocol: 2 } } },
    clientInfo: { name: "LLeMbas", version: "0.0.0" },
  },
});
const LINK_UP = JSON.stringify({ jsonrpc: "2.0", method: "_instance/link", params: { link: "up" } });
/** A room's row, keyed by its object's id, as a device's row is by the device's. */
const DEVICES = "CREATE TABLE IF NOT EXISTS devices (id TEXT PRIMARY KEY, online INTEGER NOT NULL, last_seen INTEGER)";
const readsD1 = (env: Env) => env.STORAGE === "d1-read" || env.STORAGE === "d1-both";
const writesD1 = (env: Env) => env.STORAGE === "d1-write" || env.STORAGE === "d1-both";

export class BareRoom extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    constructions++;
    // The same keep-alive the real link answers without waking, so idle sockets behave alike.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  override async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname.split("/")[1];
    if (path !== "a" && path !== "b" && path !== LINK) return new Response("no such side", { status: 404 });
    const tags = path === LINK ? ["b", LINK] : [path];
    // Only when an experiment asks: the baseline's own link does nothing more than open.
    const step = this.env.STORAGE;
    if (path === LINK && step && !isD1(step)) await this.store(step);
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], tags);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  private async store(what: ObjectStep): Promise<void> {
    const storage = this.ctx.storage;
    if (what === "sql") {
      storage.sql.exec("CREATE TABLE IF NOT EXISTS link (one INTEGER PRIMARY KEY, at INTEGER)");
      storage.sql.exec("INSERT OR REPLACE INTO link VALUES (1, ?)", Date.now());
    } else if (what === "heavy") {
      storage.sql.exec("CREATE TABLE IF NOT EXISTS heavy (n INTEGER PRIMARY KEY, data BLOB)");
      for (let n = 0; n < 256; n++) storage.sql.exec("INSERT OR REPLACE INTO heavy VALUES (?, randomblob(4096))", n);
    } else if (what === "kv") await storage.put("link", Date.now());
    else await storage.setAlarm(Date.now() + 3_600_000);
  }

  override alarm(): void {}

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    const [side, link] = this.ctx.getTags(ws) as [Side, typeof LINK | undefined];
    if (link && this.handshake(ws)) return;
    this.send(other(side), message);
  }

  /** A link socket's opening: true while the frame was one of it. */
  private handshake(ws: WebSocket): boolean {
    const seen = (ws.deserializeAttachment() as number | null) ?? 0;
    if (seen >= 2) return false;
    ws.serializeAttachment(seen + 1);
    if (seen === 0) ws.send(INITIALIZE);
    else {
      this.send("a", LINK_UP);
      if (writesD1(this.env)) this.ctx.waitUntil(this.markLinked());
    }
    return true;
  }

  /** As the relay's presence write: once the link is up, after its frames are sent. */
  private async markLinked(): Promise<void> {
    await this.env.DB.prepare("UPDATE devices SET online=1,last_seen=? WHERE id=?")
      .bind(Date.now(), this.ctx.id.toString())
      .run();
  }

  private send(side: Side, message: string | ArrayBuffer): void {
    for (const peer of this.ctx.getWebSockets(side)) {
      try {
        peer.send(message);
      } catch {
        // A closing socket misses it.
      }
    }
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code);
    } catch {
      // Already closed.
    }
  }
}

/** The rows of rooms idle-0 … idle-<rooms - 1>, each offline. */
async function seed(env: Env, rooms: number): Promise<Response> {
  const insert = env.DB.prepare("INSERT OR REPLACE INTO devices VALUES (?, 0, NULL)");
  const ids = Array.from({ length: rooms }, (_, i) => env.ROOM.idFromName(`idle-${i}`).toString());
  await env.DB.batch([env.DB.prepare(DEVICES), ...ids.map((id) => insert.bind(id))]);
  return new Response(null, { status: 204 });
}

export default {
  async fetch(request, env) {
    const [, path, room] = new URL(request.url).pathname.split("/");
    if (path === "counters") return Response.json({ constructions });
    if (path === "seed" && request.method === "POST") return seed(env, Number(room));
    if (!room || request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("ws /a/<room>, /b/<room> or /link/<room>", { status: 400 });
    }
    const id = env.ROOM.idFromName(room);
    if (path === LINK && readsD1(env)) {
      const row = await env.DB.prepare("SELECT online FROM devices WHERE id=?").bind(id.toString()).first();
      if (!row) return new Response("no such room", { status: 404 });
    }
    return env.ROOM.get(id).fetch(request);
  },
} satisfies ExportedHandler<Env>;
