/** Link tests with several client sockets: set-up, _instance/status, deadlines, and reading a race's messages. */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { HELD_HANDSHAKE } from "../../src/link/runtime/handshake";
import { OUTBOUND_HOLD_MS } from "../../src/link/runtime/outbound";
import { until } from "./chats";
import type { TestDevice, TestUser } from "./fixtures";
import { attachClient, linkedDevice, linkStub, type Peer, type Wire } from "./link";

export interface Linked {
  user: TestUser;
  device: TestDevice;
  link: Peer;
  clients: Peer[];
}

/** A person, their device linked (all capabilities by default) and `count` client sockets attached after it came up. */
export async function linkedWithClients(count: number, capabilities?: string[]): Promise<Linked> {
  const { user, device, link, client } = await linkedDevice(capabilities);
  const clients = [client];
  while (clients.length < count) clients.push(await attachClient(user, device.deviceId));
  return { user, device, link, clients };
}

/** _instance/status as a client sees it. */
export async function statusOf(client: Peer): Promise<Record<string, unknown>> {
  const answer = await client.call(`status-${crypto.randomUUID()}`, "_instance/status");
  return answer.result as Record<string, unknown>;
}

/**
 * Makes every deadline of this kind due, then runs the object's alarm. A handshake's time for the initialize answer
 * may still be in what the hello's event held (handshake.ts HeldHandshake): it is made due too.
 */
export async function fireDeadlines(deviceId: string, kind: string): Promise<void> {
  const stub = linkStub(deviceId);
  // A link's rows (and a fresh object's tables) are written just after its 101: an entry point waits for them.
  await stub.linkUp();
  await runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec("UPDATE deadlines SET due = 0 WHERE kind = ?", kind);
    const held = kind === "handshake" ? state.storage.kv.get<object>(HELD_HANDSHAKE) : undefined;
    if (held) state.storage.kv.put(HELD_HANDSHAKE, { ...held, answerBy: Date.now() - 1 });
  });
  await runDurableObjectAlarm(stub);
}

/**
 * Makes every relayed request's answer time (kept in its outbound row) run out, then runs the object's alarm. A
 * request nobody hooks has its row written only once it has been outstanding OUTBOUND_HOLD_MS (outbound.ts): the
 * object is given until then to write it.
 */
export async function fireRequestDeadlines(deviceId: string): Promise<void> {
  const stub = linkStub(deviceId);
  await until(
    () =>
      runInDurableObject(
        stub,
        (_instance, state) => state.storage.sql.exec("UPDATE outbound SET due = 0 WHERE due IS NOT NULL").rowsWritten,
      ),
    (rows) => rows > 0,
    OUTBOUND_HOLD_MS + 3000,
  );
  await runDurableObjectAlarm(stub);
}

/** Every message a peer receives within `ms` (for races, where the order between sockets is not fixed). */
export async function drain(peer: Peer, ms = 300): Promise<Wire[]> {
  const messages: Wire[] = [];
  for (;;) {
    try {
      messages.push(await peer.next(ms));
    } catch {
      return messages;
    }
  }
}

/** A device notification as clients get it while its session has a running turn: numbered (README, catching up). */
export function numbered<F extends { params: Record<string, unknown> }>(frame: F, seq: number): F {
  const meta = frame.params._meta as Record<string, unknown> | undefined;
  return { ...frame, params: { ...frame.params, _meta: { ...meta, instance: { seq } } } };
}
