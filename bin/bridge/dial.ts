/** One WebSocket connection to the instance's link endpoint, with its keep-alive. */
import WebSocket from "ws";

/** How a connection ended; the relay decides from this whether to redial. */
export interface DialEnd {
  /** The HTTP status when the upgrade was refused (401: the token no longer works). */
  status: number | null;
  code: number;
  reason: string;
  /** No pong for two keep-alive intervals: the connection was given up as dead. */
  dead: boolean;
  error: string | null;
}

export interface DialHandlers {
  onOpen(socket: WebSocket): void;
  onFrame(text: string): void;
}

/** The instance answers this text frame with "pong" without waking its Durable Object. */
const PING = "ping";
const PONG = "pong";
/** Pings left unanswered before the connection counts as dead. */
const MISSED_PONGS_LIMIT = 2;

export function dial(
  url: string,
  token: string,
  pingMs: number,
  handlers: DialHandlers,
): { socket: WebSocket; ended: Promise<DialEnd> } {
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  let status: number | null = null;
  let error: string | null = null;
  let dead = false;
  let unanswered = 0;
  let heartbeat: NodeJS.Timeout | undefined;

  socket.on("unexpected-response", (_request, response) => {
    status = response.statusCode ?? null;
    socket.terminate();
  });
  socket.on("error", (cause) => {
    error ??= cause.message;
  });
  socket.on("open", () => {
    heartbeat = setInterval(() => {
      if (unanswered >= MISSED_PONGS_LIMIT) {
        dead = true;
        socket.terminate();
        return;
      }
      unanswered++;
      socket.send(PING);
    }, pingMs);
    handlers.onOpen(socket);
  });
  socket.on("message", (data, isBinary) => {
    const text = data.toString();
    if (!isBinary && text === PONG) {
      unanswered = 0;
      return;
    }
    handlers.onFrame(text);
  });
  const ended = new Promise<DialEnd>((resolve) => {
    socket.on("close", (code, reason) => {
      clearInterval(heartbeat);
      resolve({ status, code, reason: reason.toString(), dead, error });
    });
  });
  return { socket, ended };
}
