/**
 * A stdio ACP agent command that is a device's client socket: what a stdio ACP client (acpx, an editor) writes to
 * stdin goes to the socket a line at a time, and every message from the socket is written to stdout as a line. It
 * knows nothing of ACP or of the instance beyond the socket's address and the person's token.
 *
 * Run with Node's own TypeScript support: `LEMBAS_TOKEN=lba_… node test/e2e/helpers/stdio-socket.ts <ws url>`.
 */
import { createInterface } from "node:readline";
import WebSocket from "ws";

const [url] = process.argv.slice(2);
const token = process.env.LEMBAS_TOKEN;
if (!url || !token) {
  process.stderr.write("usage: LEMBAS_TOKEN=lba_… stdio-socket <ws(s)://…/api/devices/<id>/client>\n");
  process.exit(2);
}

const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
// Lines read before the socket opens wait for it, in order.
const waiting: string[] = [];

socket.on("open", () => {
  for (const line of waiting.splice(0)) socket.send(line);
});
socket.on("message", (data) => {
  process.stdout.write(`${data.toString()}\n`);
});
socket.on("unexpected-response", (_request, response) => {
  process.stderr.write(`the client socket was refused: ${response.statusCode}\n`);
  process.exit(1);
});
socket.on("error", (error) => {
  process.stderr.write(`the client socket failed: ${error.message}\n`);
  process.exit(1);
});
socket.on("close", (code, reason) => {
  if (code !== 1000) process.stderr.write(`the client socket closed: ${code} ${reason.toString()}\n`);
  process.exit(code === 1000 ? 0 : 1);
});

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
lines.on("line", (line) => {
  if (line.trim() === "") return;
  if (socket.readyState === WebSocket.OPEN) socket.send(line);
  else waiting.push(line);
});
// The client is done with its agent: close the socket as a client that hangs up does.
lines.on("close", () => {
  if (socket.readyState === WebSocket.CONNECTING) socket.once("open", () => socket.close(1000));
  else socket.close(1000);
});
