import { describe, expect, it } from "vitest";
import { LAG_HARD_LIMIT, LAG_LIMIT } from "../../src/link/runtime/drain";
import type { Peer, Wire } from "../helpers/link";
import { linkedWithClients, statusOf } from "../helpers/linked";

const KiB = 1024;
const MiB = 1024 * KiB;
const chunk = (text: string) => ({
  jsonrpc: "2.0",
  method: "session/update",
  params: { sessionId: "ses_1", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
});
const textOf = (message: Wire) => (message.params as { update: { content: { text: string } } }).update.content.text;

/** Reads `count` notifications, as a client that reads normally does (the peer answers the instance's probes). */
async function readSome(peer: Peer, count: number): Promise<Wire[]> {
  const seen: Wire[] = [];
  while (seen.length < count) seen.push(await peer.next(10_000));
  return seen;
}

describe("a client that stops reading", () => {
  it("is closed with 4503 once far enough behind; a client that reads — and never sends anything of its own — keeps everything", async () => {
    const { link, clients } = await linkedWithClients(2);
    const [reader, stalled] = clients as [Peer, Peer];
    stalled.answersDrainProbes = false;
    // The stalled socket has a request in flight: it goes with the socket.
    stalled.send({ jsonrpc: "2.0", id: "mine", method: "session/new", params: { cwd: "/w" } });
    const pending = await link.next();
    let closed: number | null = null;
    stalled.closed.then(
      ({ code }) => (closed = code),
      () => {},
    );

    // The device streams in batches of 1 MiB; the reader reads each batch before the next (as a reader on a fast
    // network does); the stalled socket answers nothing.
    const sent: string[] = [];
    const read: string[] = [];
    while (closed === null && sent.length * 256 * KiB <= LAG_HARD_LIMIT + 4 * MiB) {
      for (let i = 0; i < 4; i++) {
        const text = `${sent.length}:`.padEnd(256 * KiB, "y");
        sent.push(text);
        link.send(chunk(text));
      }
      read.push(...(await readSome(reader, 4)).map(textOf));
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    await stalled.closed;
    expect(closed).toBe(4503);
    const behindWhenClosed = sent.length * 256 * KiB;
    expect(behindWhenClosed).toBeGreaterThan(LAG_LIMIT);
    expect(behindWhenClosed).toBeLessThanOrEqual(LAG_HARD_LIMIT + 2 * MiB);
    expect(read).toEqual(sent);

    link.send(chunk("after"));
    expect((await readSome(reader, 1)).map(textOf)).toEqual(["after"]);
    expect((await statusOf(reader)).link).toBe("up");
    // The dropped request's late answer reaches nobody.
    link.send({ jsonrpc: "2.0", id: pending.id, result: { sessionId: "ses_late" } });
    await reader.silent();
  }, 60_000);
});
