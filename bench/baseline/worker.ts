/**
 * The baseline the benchmark measures the relay against: the least a Durable Object can do to relay between
 * sockets with the same Hibernation API. `/a/<room>` and `/b/<room>` accept a socket into the room's object; a frame
 * from an "a" socket goes to every "b" socket, a frame from a "b" socket to every "a" socket — as it came, with no
 * parsing, validation, storage or alarm. With one socket on each side that is a bare echo (client ↔ device); with
 * many "a" sockets, a bare broadcast. `GET /counters` says how many times a room object was constructed (an evicted
 * object is constructed again by its next event), the same count the instrumented real Worker keeps.
 */
import { DurableObject } from "cloudflare:workers";

interface Env {
  ROOM: DurableObjectNamespace<BareRoom>;
}

type Side = "a" | "b";
let constructions = 0;
const other = (side: Side): Side => (side === "a" ? "b" : "a");

export class BareRoom extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    constructions++;
    // The same keep-alive the real link answers without waking, so idle sockets behave alike.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  override async fetch(request: Request): Promise<Response> {
    const side = new URL(request.url).pathname.split("/")[1];
    if (side !== "a" && side !== "b") return new Response("no such side", { status: 404 });
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [side]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    const [side] = this.ctx.getTags(ws) as [Side];
    for (const peer of this.ctx.getWebSockets(other(side))) {
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

export default {
  fetch(request, env) {
    if (new URL(request.url).pathname === "/counters") return Response.json({ constructions });
    const room = new URL(request.url).pathname.split("/")[2];
    if (!room || request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("ws /a/<room> or /b/<room>", { status: 400 });
    }
    return env.ROOM.get(env.ROOM.idFromName(room)).fetch(request);
  },
} satisfies ExportedHandler<Env>;
