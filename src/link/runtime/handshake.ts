/**
 * The link's handshake and lifecycle. A device socket starts a link (replacing any earlier one, which is closed
 * with 4409); the device must send `_lembas/hello` first, within HELLO_WITHIN_MS; the instance answers with
 * `initialize` and the link is up when the device answers that. Every step is in SQLite (state, hello, the
 * initialize request in the outbound table, the deadline; between the hello and its answer, one key-value entry:
 * HeldHandshake), so an eviction between steps loses nothing.
 */
import { InitializeResult } from "../../protocol/acp";
import { clientInitialize } from "../../protocol/capabilities";
import { CloseCode } from "../../protocol/close-codes";
import { HELLO_METHOD, initializeParams } from "../../protocol/handshake";
import { Hello, keptHello } from "../../protocol/lembas";
import { check } from "../../protocol/issues";
import { isRecord, type Classified } from "../../protocol/jsonrpc";
import { LINK_PROTOCOLS, VERSION, type LinkProtocol } from "../../version";
import { logFailure } from "./failures";
import { announceLinkUp } from "./instance-methods";
import { INSTANCE_ORIGIN, type OutboundRequest } from "./outbound";
import { oweLinked, oweUnlinked } from "./presence";
import type { LinkRuntime, LinkDownReason, LinkFeature } from "./runtime";
import { closeSocket, INTERNAL_ERROR_CLOSE, socketById } from "./sockets";
import type { LinkChange, LinkRecord } from "./store";
import { UNCONFIRMED } from "./unconfirmed";

export const HELLO_WITHIN_MS = 10_000;
export const INITIALIZE_WITHIN_MS = 30_000;
const HANDSHAKE_DEADLINE = "handshake";
const INITIALIZE_PURPOSE = "handshake/initialize";

/**
 * What the hello's event records: the link's state after its hello, the initialize request's row, that request's
 * answer deadline and the request ids reserved — one key-value entry put with `allowUnconfirmed`, and nothing else.
 * Rows written there would hold every output after them until their commit, and a device near the instance answers
 * initialize sooner: the link-up announcement waited for it. The entry holds nothing back; the failure accepted is
 * losing it with the object's host within its commit's time, when the device's socket dies too and it dials again.
 * The answer (or the link's end) writes the link's row and deletes the entry; an object that starts with the entry,
 * or whose hello deadline passes before the answer, writes it as rows (writeHeldHandshake).
 */
interface HeldHandshake {
  linkId: string;
  protocol: LinkProtocol;
  hello: Hello;
  request: OutboundRequest;
  answerBy: number;
  idsTo: number;
}
export const HELD_HANDSHAKE = "handshake";

const speaks = (protocol: number): protocol is LinkProtocol => (LINK_PROTOCOLS as readonly number[]).includes(protocol);

const notSpoken = (protocol: number | string) =>
  `link protocol ${protocol} is not spoken here (this instance speaks ${LINK_PROTOCOLS.join(", ")}); update one of them`;

/** A new device socket: any earlier link is replaced, and this one waits for its hello. */
export async function beginLink(rt: LinkRuntime, linkId: string, deviceId: string, ownerId: string): Promise<void> {
  rt.links.setMeta("device_id", deviceId);
  rt.links.setMeta("owner_id", ownerId);
  const previous = rt.link();
  if (previous && previous.state !== "down") {
    const old = socketById(rt.ctx, previous.linkId);
    await endLink(rt, previous, "replaced");
    if (old) closeSocket(old, CloseCode.Replaced, "replaced by a newer link of this device");
  }
  const now = Date.now();
  rt.links.begin(linkId, now);
  rt.deadlines.set(HANDSHAKE_DEADLINE, linkId, now + HELLO_WITHIN_MS);
}

/** Refuses the link: closes the socket with a code and ends the link's state. */
async function refuse(
  rt: LinkRuntime,
  link: LinkRecord,
  code: number,
  reason: string,
  why: LinkDownReason,
): Promise<void> {
  rt.closeDevice(code, reason);
  await endLink(rt, link, why);
}

/** The first frame of a link in state "hello": it must be the hello, in a protocol the instance speaks. */
export async function onFirstFrame(rt: LinkRuntime, link: LinkRecord, frame: Classified): Promise<void> {
  if (frame.kind !== "notification" || frame.message.method !== HELLO_METHOD) {
    const what = frame.kind === "response" ? "an answer" : `a ${frame.kind} ${frame.message.method}`;
    return refuse(
      rt,
      link,
      CloseCode.HandshakeTimeout,
      `expected the ${HELLO_METHOD} notification first, got ${what}`,
      "handshake_failed",
    );
  }
  // Only the protocol can fail the hello's reading (lembas.ts): one the instance cannot read is not one it speaks.
  const read = check(Hello, frame.message.params);
  if (!read.ok) {
    const said = isRecord(frame.message.params) ? JSON.stringify(frame.message.params.protocol) : "(none)";
    return refuse(rt, link, CloseCode.ProtocolMismatch, notSpoken(said), "protocol_mismatch");
  }
  const { protocol } = read.value;
  if (!speaks(protocol)) return refuse(rt, link, CloseCode.ProtocolMismatch, notSpoken(protocol), "protocol_mismatch");
  const hello = keptHello(read.value);
  const id = rt.sendRequest({
    method: "initialize",
    params: initializeParams(protocol, VERSION),
    origin: INSTANCE_ORIGIN,
    originId: null,
    purpose: INITIALIZE_PURPOSE,
    unrecorded: true,
  });
  const request = id === null ? null : rt.outbound.find(id);
  if (!request) return;
  rt.links.hold(link.linkId, { state: "initialize", protocol, hello });
  const held: HeldHandshake = {
    linkId: link.linkId,
    protocol,
    hello,
    request,
    answerBy: Date.now() + INITIALIZE_WITHIN_MS,
    idsTo: rt.links.reservedIds(),
  };
  rt.ctx.storage.put(HELD_HANDSHAKE, held, UNCONFIRMED).catch((err: unknown) => helloFailed(rt, link, err));
}

/** A link whose hello cannot be stored is closed (1011) rather than left waiting; the device dials again. */
export async function helloFailed(rt: LinkRuntime, link: LinkRecord, err: unknown): Promise<void> {
  logFailure(rt, "the link's hello", err);
  if (rt.link()?.linkId !== link.linkId) return;
  rt.closeDevice(INTERNAL_ERROR_CLOSE, "the instance failed to start this link; dial again");
  try {
    await endLink(rt, link, "closed");
  } catch (endErr) {
    logFailure(rt, "the end of a link whose hello failed", endErr);
  }
}

/** Writes the link's row, with what the hello's event held (the entry then goes). */
function writeLink(rt: LinkRuntime, linkId: string, change: LinkChange): void {
  const held = rt.links.holds();
  rt.links.update(linkId, change);
  if (held) rt.ctx.storage.kv.delete(HELD_HANDSHAKE);
}

/**
 * Writes what the hello's event held as rows — the link's state, the initialize request's row, its deadline, the
 * request ids — and deletes the entry: when the object starts with it (reconcile.ts), or when the hello's deadline
 * passes before the answer. Returns what was held, if anything. The entry exists only while the link is between its
 * hello and the answer (every write past that deletes it), so any other object reads nothing here.
 */
export function writeHeldHandshake(rt: LinkRuntime): HeldHandshake | null {
  const link = rt.link();
  if (link?.state !== "hello" && link?.state !== "initialize") return null;
  const held = rt.ctx.storage.kv.get<HeldHandshake>(HELD_HANDSHAKE) ?? null;
  if (!held) return null;
  if (link.linkId === held.linkId) {
    rt.links.update(held.linkId, { state: "initialize", protocol: held.protocol, hello: held.hello });
    rt.links.reserveIdsTo(held.idsTo);
    if (rt.outbound.find(held.request.id)) rt.writeHeldRequest(held.request);
    else rt.track(held.request);
    rt.deadlines.set(HANDSHAKE_DEADLINE, held.linkId, held.answerBy);
  }
  rt.ctx.storage.kv.delete(HELD_HANDSHAKE);
  return held;
}

/** Ends a link's state: outstanding requests fail, features are told, D1 says offline (not when replaced). */
export async function endLink(rt: LinkRuntime, link: LinkRecord, reason: LinkDownReason): Promise<void> {
  if (link.state === "down") return;
  const wasUp = link.state === "up";
  const at = Date.now();
  writeLink(rt, link.linkId, { state: "down", downAt: at });
  rt.deadlines.clear(HANDSHAKE_DEADLINE, link.linkId);
  await rt.emit("onLinkDown", { ...link, state: "down", downAt: at }, reason, wasUp);
  if (reason !== "replaced") oweUnlinked(rt, at);
}

export const handshake: LinkFeature = {
  name: "handshake",
  deviceAnswers: {
    [INITIALIZE_PURPOSE]: async (rt, request, answer) => {
      const link = rt.link();
      // An answer for a link that was since replaced or closed changes nothing.
      if (!link || link.linkId !== request.linkId || link.state !== "initialize") return;
      if ("error" in answer) {
        return refuse(
          rt,
          link,
          CloseCode.HandshakeFailed,
          `initialize failed: ${answer.error.message}`,
          "handshake_failed",
        );
      }
      const result = check(InitializeResult, answer.result);
      if (!result.ok)
        return refuse(
          rt,
          link,
          CloseCode.HandshakeFailed,
          `unreadable initialize result: ${result.error}`,
          "handshake_failed",
        );
      if (result.value.protocolVersion !== 1) {
        return refuse(
          rt,
          link,
          CloseCode.ProtocolMismatch,
          `ACP protocolVersion ${result.value.protocolVersion} is not 1`,
          "protocol_mismatch",
        );
      }
      const lembas = result.value._meta?.lembas;
      // What initialize's _meta.lembas says wins over the hello (a _meta.lembas without protocol says 1).
      const protocol = lembas?.protocol ?? link.protocol;
      if (protocol !== null && !speaks(protocol)) {
        return refuse(rt, link, CloseCode.ProtocolMismatch, notSpoken(protocol), "protocol_mismatch");
      }
      const at = Date.now();
      // The clients are told before the link is written up (its row with what the hello held, its deadline, the
      // owed presence), so that commit holds nothing of theirs; the features' onLinkUp read the stored link after.
      announceLinkUp(rt, { ...link, state: "up", initialize: result.value, protocol, upAt: at });
      writeLink(rt, link.linkId, { state: "up", initialize: result.value, protocol, upAt: at });
      rt.deadlines.clear(HANDSHAKE_DEADLINE, link.linkId);
      const up = rt.link()!;
      await rt.emit("onLinkUp", up);
      if (up.hello) {
        oweLinked(
          rt,
          {
            protocol: up.protocol ?? up.hello.protocol,
            host: up.hello.device?.host ?? null,
            platform: up.hello.device?.platform ?? null,
            capabilities: lembas?.capabilities ?? [],
            agentInfo: result.value.agentInfo ?? null,
            // What clients are given (protocol/capabilities.ts): the offers the instance relays.
            agentCapabilities: clientInitialize(result.value).agentCapabilities ?? null,
            authMethods: result.value.authMethods ?? null,
          },
          at,
        );
      }
    },
  },
  deadlines: {
    [HANDSHAKE_DEADLINE]: async (rt, linkId) => {
      const link = rt.link();
      if (!link || link.linkId !== linkId || (link.state !== "hello" && link.state !== "initialize")) return;
      // The hello's deadline passed with initialize asked and its answer not due yet: its own deadline is written now.
      const held = writeHeldHandshake(rt);
      if (held?.linkId === linkId && held.answerBy > Date.now()) return;
      const reason =
        link.state === "hello"
          ? `no ${HELLO_METHOD} within ${HELLO_WITHIN_MS / 1000} s`
          : `no answer to initialize within ${INITIALIZE_WITHIN_MS / 1000} s`;
      await refuse(rt, link, CloseCode.HandshakeTimeout, reason, "handshake_timeout");
    },
  },
};
