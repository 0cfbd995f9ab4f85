/**
 * The link's handshake and lifecycle. A device socket starts a link (replacing any earlier one, which is closed
 * with 4409); the device must send `_lembas/hello` first, within HELLO_WITHIN_MS; the instance answers with
 * `initialize` and the link is up when the device answers that. Every step is in SQLite (state, hello, the
 * initialize request in the outbound table, the deadline), so an eviction between steps loses nothing.
 */
import { InitializeResult } from "../protocol/acp";
import { clientInitialize } from "../protocol/capabilities";
import { CloseCode } from "../protocol/close-codes";
import { HELLO_METHOD, initializeParams } from "../protocol/handshake";
import { Hello } from "../protocol/lembas";
import { check } from "../protocol/issues";
import type { Classified } from "../protocol/jsonrpc";
import { LINK_PROTOCOLS, VERSION, type LinkProtocol } from "../version";
import type { LinkDownReason, LinkFeature } from "./feature";
import { announceLinkUp } from "./instance-methods";
import { oweLinked, oweUnlinked } from "./presence";
import type { LinkRuntime } from "./runtime";
import { closeSocket, socketById } from "./sockets";
import type { LinkRecord } from "./store";

export const HELLO_WITHIN_MS = 10_000;
export const INITIALIZE_WITHIN_MS = 30_000;
const HANDSHAKE_DEADLINE = "handshake";
const INITIALIZE_PURPOSE = "handshake/initialize";

const speaks = (protocol: number): protocol is LinkProtocol => (LINK_PROTOCOLS as readonly number[]).includes(protocol);

const notSpoken = (protocol: number) =>
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
  const hello = check(Hello, frame.message.params);
  if (!hello.ok) {
    return refuse(
      rt,
      link,
      CloseCode.HandshakeFailed,
      `unreadable ${HELLO_METHOD}: ${hello.error}`,
      "handshake_failed",
    );
  }
  const { protocol } = hello.value;
  if (!speaks(protocol)) return refuse(rt, link, CloseCode.ProtocolMismatch, notSpoken(protocol), "protocol_mismatch");
  // Asked first, recorded after (in the same synchronous run): the writes' commit does not hold the request back.
  rt.requestDevice("initialize", initializeParams(protocol, VERSION), INITIALIZE_PURPOSE);
  rt.links.update(link.linkId, { state: "initialize", protocol, hello: hello.value });
  rt.deadlines.set(HANDSHAKE_DEADLINE, link.linkId, Date.now() + INITIALIZE_WITHIN_MS);
}

/** Ends a link's state: outstanding requests fail, features are told, D1 says offline (not when replaced). */
export async function endLink(rt: LinkRuntime, link: LinkRecord, reason: LinkDownReason): Promise<void> {
  if (link.state === "down") return;
  const wasUp = link.state === "up";
  const at = Date.now();
  rt.links.update(link.linkId, { state: "down", downAt: at });
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
      // The clients are told before the link is written up (its row, its deadline, the answered request's row, the
      // owed presence), so that commit holds nothing of theirs; the features' onLinkUp read the stored link after.
      announceLinkUp(rt, { ...link, state: "up", initialize: result.value, protocol, upAt: at });
      rt.links.update(link.linkId, { state: "up", initialize: result.value, protocol, upAt: at });
      rt.deadlines.clear(HANDSHAKE_DEADLINE, link.linkId);
      const up = rt.link()!;
      await rt.emit("onLinkUp", up);
      if (up.hello) {
        oweLinked(
          rt,
          {
            protocol: up.protocol ?? up.hello.protocol,
            host: up.hello.device.host,
            platform: up.hello.device.platform,
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
      const reason =
        link.state === "hello"
          ? `no ${HELLO_METHOD} within ${HELLO_WITHIN_MS / 1000} s`
          : `no answer to initialize within ${INITIALIZE_WITHIN_MS / 1000} s`;
      await refuse(rt, link, CloseCode.HandshakeTimeout, reason, "handshake_timeout");
    },
  },
};
