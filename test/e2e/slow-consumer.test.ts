/**
 * End to end: a client that stops reading. While a device streams a long turn, one client socket's TCP connection
 * is paused (nothing is read from it); another client — the ACP SDK's own, which never sends anything but its
 * requests, and answers the instance's requests as any JSON-RPC peer does — reads normally. The paused socket is
 * closed with 4503 once far enough behind, what the runtime holds for it stays bounded, and the reading client
 * gets every chunk in order and its prompt's answer; the link stays up.
 *
 * What the bound bounds is what the object sends a socket that does not read: all of it waits in the runtime (and
 * in wrangler dev's proxy) until read. The paused socket, read once the turn is over, shows exactly that. The
 * processes' memory does not tell the two cases apart reliably on a shared machine: bounded, it grew +121 to +273 MiB
 * (the reader's frames in flight and the garbage of a 10 MiB/s stream, collected lazily), not far below the
 * unbounded case's growth for the same stream (+205 MB for 200 MB streamed, +378 MiB for 320 MiB).
 */
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, loginDevice } from "./helpers/accounts.js";
import { ClientSocket } from "./helpers/client.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { LembasDevice } from "./helpers/lembas-device.js";
import { openPausedSocket, type PausedSocket } from "./helpers/paused-socket.js";

const MiB = 1024 * 1024;
const CHUNK = 1 * MiB;
/** The README's bounds for a client socket that does not read: 16 MiB behind for 5 s, or 64 MiB at all. */
const LAG_LIMIT = 16 * MiB;
const LAG_HARD_LIMIT = 64 * MiB;
const CHUNKS = 320;
const SESSION_ID = "ses_slow_1";
/** The device streams 1 MiB a tick: about 10 MiB a second, more than an agent writes, less than this machine relays. */
const PACE_MS = 100;

let instance: Instance;
let device: LembasDevice | undefined;
let reader: acp.ClientConnection | undefined;
let paused: PausedSocket | undefined;

beforeAll(async () => {
  instance = await startInstance();
});

afterAll(async () => {
  reader?.close();
  paused?.destroy();
  await device?.close();
  await instance?.stop();
});

describe("a client whose TCP connection stops reading while the device streams", () => {
  it("is closed with 4503 having been sent no more than its bound; the ACP client reading alongside gets everything", async () => {
    const person = await firstPerson(instance.origin);
    const login = await loginDevice(instance.origin, person, "e2e-slow");
    const root = await tempDir("slow-root");
    const url = `${instance.origin.replace(/^http/, "ws")}/api/devices/${login.deviceId}/client`;
    device = new LembasDevice({
      origin: instance.origin,
      token: login.token,
      capabilities: [],
      roots: [root],
      host: "e2e-slow",
    });
    device.app
      .onRequest(acp.methods.agent.session.new, () => ({ sessionId: SESSION_ID }))
      .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
        for (let i = 0; i < CHUNKS; i++) {
          await new Promise((resolve) => setTimeout(resolve, PACE_MS));
          const text = `${i}:`.padEnd(CHUNK, "z");
          await client.notify(acp.methods.client.session.update, {
            sessionId: params.sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
          });
        }
        return { stopReason: "end_turn" };
      });
    await device.link();

    paused = await openPausedSocket(url, { authorization: person.apiAuth });

    const received: number[] = [];
    reader = acp
      .client({ name: "e2e-reader" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        const update = params.update;
        if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text")
          received.push(Number(update.content.text.split(":", 1)[0]));
      })
      .connect(createWebSocketStream(url, { headers: { authorization: person.apiAuth }, cookies: "omit", WebSocket }));
    await reader.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const session = await reader.agent.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
    expect(session.sessionId).toBe(SESSION_ID);

    const answer = await reader.agent.request(acp.methods.agent.session.prompt, {
      sessionId: SESSION_ID,
      prompt: [{ type: "text", text: "stream" }],
    });

    expect(answer.stopReason).toBe("end_turn");
    expect(received).toEqual(Array.from({ length: CHUNKS }, (_, i) => i));

    // Read now, it gets what the object had sent it before closing it — what the runtime held for it: past the
    // limit, within the hard limit and the frame that crossed it, not the whole turn. Unbounded, it would read on
    // past that and be stopped there.
    const held = LAG_HARD_LIMIT + 2 * CHUNK;
    const { dataBytes, code } = await paused.resumeToClose(held);
    expect(dataBytes).toBeLessThanOrEqual(held);
    expect(code).toBe(4503);
    expect(dataBytes).toBeGreaterThan(LAG_LIMIT);
    const status = await ClientSocket.open(url, { authorization: person.apiAuth });
    expect((await status.request("_instance/status", {})).result).toMatchObject({ link: "up" });
    status.close();
  }, 180_000);
});
