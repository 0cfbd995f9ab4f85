/**
 * What really happens to a frame over 32 MiB, under wrangler dev (the same workerd that runs deployed Workers): the
 * runtime closes the socket with 1009 "Message is too large" before the device's object sees any of it — so the
 * object's own 4413 is never what a peer gets. Nothing else is touched: other sockets carry on, and a device link
 * closed so goes down like any dropped link and links again (README, close codes).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type WebSocket from "ws";
import { firstPerson, loginDevice, type Person } from "./helpers/accounts.js";
import { ClientSocket } from "./helpers/client.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { LembasDevice } from "./helpers/lembas-device.js";

const MiB = 1024 * 1024;
/** One byte over what the runtime reads. */
const OVER_32_MIB = 32 * MiB + 1;

let instance: Instance;
let person: Person;
let deviceId: string;
let device: LembasDevice;

beforeAll(async () => {
  instance = await startInstance();
  person = await firstPerson(instance.origin);
  const login = await loginDevice(instance.origin, person, "big-frames");
  deviceId = login.deviceId;
  device = new LembasDevice({ origin: instance.origin, token: login.token, capabilities: [], roots: [], host: "big" });
  await device.link();
}, 60_000);

afterAll(async () => {
  await device?.close();
  await instance?.stop();
});

const openClient = () =>
  ClientSocket.open(`${instance.origin.replace(/^http/, "ws")}/api/devices/${deviceId}/client`, {
    cookie: person.cookie,
    origin: instance.origin,
  });

const closing = (socket: WebSocket) =>
  new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );

/** A JSON-RPC frame of exactly `bytes` bytes (ASCII padding in its params). */
function frameOf(bytes: number, message: { id?: string; method: string; params: Record<string, unknown> }): string {
  const bare = JSON.stringify({ jsonrpc: "2.0", ...message, params: { ...message.params, pad: "" } });
  const text = JSON.stringify({
    jsonrpc: "2.0",
    ...message,
    params: { ...message.params, pad: "x".repeat(bytes - bare.length) },
  });
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

describe("a frame over 32 MiB", () => {
  it("from a client: the runtime closes that socket with 1009; the object, the link and other sockets carry on", async () => {
    const sender = await openClient();
    const other = await openClient();
    const closed = closing(sender.socket);
    sender.socket.send(frameOf(OVER_32_MIB, { id: "big", method: "_instance/status", params: {} }));
    expect(await closed).toEqual({ code: 1009, reason: "Message is too large" });
    expect(sender.messages.filter((m) => m.id === "big")).toEqual([]);

    expect((await other.request("_instance/status", {})).result).toMatchObject({ link: "up" });
    // A frame at the limit itself reaches the object, which judges it by its kind: not a prompt, so over 1 MiB.
    const third = await openClient();
    third.socket.send(frameOf(32 * MiB, { id: "at-limit", method: "_instance/status", params: {} }));
    expect((await third.next((m) => m.id === "at-limit", { timeoutMs: 60_000 })).error).toMatchObject({
      code: -32600,
    });
    expect((await third.request("_instance/status", {})).result).toMatchObject({ link: "up" });
    for (const socket of [other, third]) socket.close();
  }, 120_000);

  it("from the device: the runtime closes the link with 1009; it goes down like a dropped link and links again", async () => {
    const watcher = await openClient();
    const closed = device.closing();
    device.sendRaw(
      frameOf(OVER_32_MIB, {
        method: "session/update",
        params: { sessionId: "ses_big", update: { sessionUpdate: "x" } },
      }),
    );
    expect(await closed).toEqual({ code: 1009, reason: "Message is too large" });
    const down = await watcher.next((m) => m.method === "_instance/link" && m.params.link === "down");
    expect(down.params.reason).toBe("closed");
    expect(watcher.messages.some((m) => m.method === "session/update")).toBe(false);

    await device.link();
    await watcher.next((m) => m.method === "_instance/link" && m.params.link === "up");
    expect((await watcher.request("_instance/status", {})).result).toMatchObject({ link: "up" });
    watcher.close();
  }, 120_000);
});
