/**
 * The instance's side of the link, played locally: discovery plus a WebSocket endpoint that records every
 * frame and lets a test speak JSON-RPC to the bridge, close with any code, or refuse the upgrade.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type WebSocket from "ws";
import { WebSocketServer } from "ws";

export interface LinkConnection {
  socket: WebSocket;
  /** Every text frame the bridge sent on this connection, in order, pings included. */
  frames: string[];
  authorization: string | undefined;
  /** The close code the bridge sent or the connection ended with. */
  closed: Promise<number>;
  /** The next JSON-RPC message from the bridge matching `predicate` (one already received counts). */
  next(predicate: (message: Json) => boolean, timeoutMs?: number): Promise<Json>;
  send(message: Json): void;
}

export type Json = Record<string, unknown> & {
  id?: string | number | null;
  method?: string;
  // biome-ignore lint/suspicious/noExplicitAny: a received frame is read loosely; each assertion states the shape it expects
  params?: any;
  // biome-ignore lint/suspicious/noExplicitAny: a received frame is read loosely; each assertion states the shape it expects
  result?: any;
  // biome-ignore lint/suspicious/noExplicitAny: a received frame is read loosely; each assertion states the shape it expects
  error?: any;
};

export interface LinkServer {
  origin: string;
  connections: LinkConnection[];
  /** The n-th connection (0-based), once it is open. */
  connection(n: number, timeoutMs?: number): Promise<LinkConnection>;
  /** Refuse upgrades with this status instead (401: a revoked token). */
  refuseWith: number | null;
  /** Answer "ping" with "pong", as the instance's auto-response does. */
  answerPings: boolean;
  /** The link protocols discovery lists. */
  protocols: number[];
  close(): Promise<void>;
}

export async function startLinkServer(): Promise<LinkServer> {
  const http: Server = createServer((request, response) => {
    if (request.url === "/.well-known/lembas.json") {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          protocol: 1,
          protocols: server.protocols,
          endpoints: { link: `${wsOrigin()}/api/devices/link` },
        }),
      );
      return;
    }
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ detail: "no such route" }));
  });
  const wss = new WebSocketServer({ noServer: true });
  const waiting = new Set<() => void>();
  const server: LinkServer = {
    origin: "",
    connections: [],
    refuseWith: null,
    answerPings: true,
    protocols: [1, 2],
    connection: (n, timeoutMs = 20_000) => until(() => server.connections[n], waiting, timeoutMs, `connection ${n}`),
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
  const wsOrigin = () => server.origin.replace(/^http/, "ws");

  http.on("upgrade", (request: IncomingMessage, socket, head) => {
    if (request.url !== "/api/devices/link" || server.refuseWith !== null) {
      const status = server.refuseWith ?? 404;
      socket.end(
        `HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"detail":"refused"}`,
      );
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const frames: string[] = [];
      const messages: Json[] = [];
      const arrivals = new Set<() => void>();
      const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
      ws.on("message", (data) => {
        const text = data.toString();
        frames.push(text);
        if (text === "ping") {
          if (server.answerPings) ws.send("pong");
          return;
        }
        messages.push(JSON.parse(text) as Json);
        for (const arrived of arrivals) arrived();
      });
      server.connections.push({
        socket: ws,
        frames,
        authorization: request.headers.authorization,
        closed,
        next: (predicate, timeoutMs = 20_000) =>
          until(() => messages.find(predicate), arrivals, timeoutMs, "a message").then((found) => {
            // A message is handed out once, so a test can wait for the next one of the same kind.
            messages.splice(messages.indexOf(found), 1);
            return found;
          }),
        send: (message) => ws.send(JSON.stringify(message)),
      });
      for (const wake of waiting) wake();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  server.origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return server;
}

function until<T>(probe: () => T | undefined, wakers: Set<() => void>, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      wakers.delete(check);
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    const check = () => {
      const found = probe();
      if (found === undefined) return;
      clearTimeout(timer);
      wakers.delete(check);
      resolve(found);
    };
    wakers.add(check);
    check();
  });
}
