/**
 * `lembas-edge link`: runs a stdio ACP agent and relays it to the instance, one JSON line ↔ one WebSocket
 * message, redialling while the agent keeps running.
 */
import { constants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws";
import { CloseCode } from "../../src/protocol/close-codes.js";
import { startAgent, type AgentProcess } from "./agent-process.js";
import { redialDelay } from "./backoff.js";
import type { Credential } from "./config-store.js";
import { dial, type DialEnd } from "./dial.js";
import { PROTOCOL_MISMATCH, linkUrl, readDiscovery, speaksOurProtocol } from "./discovery.js";
import { readFrame } from "./frames.js";
import { helloMessage } from "./hello.js";
import { InitializeOnce } from "./initialize-once.js";
import { Stop, say } from "./log.js";
import { Outbox } from "./outbox.js";

export interface LinkOptions {
  credential: Credential;
  agent: readonly [string, ...string[]];
  version: string;
  pingMs: number;
  /** How long the agent's process group has to exit after SIGTERM before it is killed. */
  stopGraceMs: number;
}

export const REVOKED = "this device was revoked; run lembas-edge login again";
export const REPLACED =
  "another link of this device took over (a newer lembas-edge link runs elsewhere); stopping this one";

/** Close codes that end the bridge rather than a single connection; any other close is redialled. */
const STOPPING_CLOSES: ReadonlyMap<number, string> = new Map([
  [CloseCode.ProtocolMismatch, PROTOCOL_MISMATCH],
  [CloseCode.Revoked, REVOKED],
  [CloseCode.Replaced, REPLACED],
]);

/** How long the bridge waits for the instance to answer its closing handshake when the agent has exited. */
const CLOSE_GRACE_MS = 2_000;

/** The signals a terminal or a service manager stops the bridge with. */
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export async function link(options: LinkOptions): Promise<number> {
  const agent = startAgent(options.agent);
  const relay = new Relay(agent, options);
  const stopAgent = () => agent.stop(options.stopGraceMs);
  // A second signal while stopping kills the agent's group at once (stop() again).
  let stoppedBy: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stoppedBy) say(`${signal}: stopping the agent`);
    stoppedBy ??= signal;
    stopAgent();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  const pumped = relay.pumpAgent().catch((error: unknown) => {
    // The agent wrote something that is not ACP framing (e.g. a line past the size limit): it cannot go on.
    say(`stopped reading the agent: ${error instanceof Error ? error.message : String(error)}`);
    stopAgent();
  });
  // The agent's last lines are relayed before the link closes behind it.
  const agentExit = Promise.all([agent.exited, pumped]).then(([code]) => {
    relay.shutdown();
    return code;
  });
  const stop = await relay.run();
  if (stop) {
    say(stop.message);
    stopAgent();
    await agentExit;
    return stop.exitCode;
  }
  const code = await agentExit;
  say(`the agent exited with code ${code}`);
  // Stopped by a signal: the shell's convention for it, whatever the agent answered the signal with.
  return stoppedBy ? 128 + constants.signals[stoppedBy] : code;
}

class Relay {
  private readonly outbox = new Outbox();
  private readonly initialize: InitializeOnce;
  private readonly stopping = new AbortController();
  /** The current connection, and whether its handshake (hello, initialize answered) is done. */
  private socket: WebSocket | null = null;
  private ready = false;
  private dropNoted = false;

  constructor(
    private readonly agent: AgentProcess,
    private readonly options: LinkOptions,
  ) {
    this.initialize = new InitializeOnce(agent);
  }

  /** The agent exited: close the link normally and dial no more. */
  shutdown(): void {
    this.stopping.abort();
    const socket = this.socket;
    if (!socket) return;
    socket.close(1000, "the agent exited");
    // An instance that does not answer the closing handshake must not keep the bridge alive.
    setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** Dials until the agent exits (null) or the instance says to stop (the Stop to report). */
  async run(): Promise<Stop | null> {
    const origin = this.options.credential.instance;
    let attempt = 0;
    while (!this.stopping.signal.aborted) {
      const url = await this.linkUrl(origin);
      if (url instanceof Stop) return url;
      if (this.stopping.signal.aborted) return null;
      const { socket, ended } = dial(url, this.options.credential.token, this.options.pingMs, {
        onOpen: (open) => this.opened(open),
        onFrame: (text) => this.fromInstance(socket, text),
      });
      this.socket = socket;
      const end = await ended;
      const handshaken = this.ready;
      this.socket = null;
      this.ready = false;
      if (this.stopping.signal.aborted) return null;

      const stop = stopFor(end);
      if (stop) return stop;
      if (handshaken) attempt = 0;
      const delay = redialDelay(attempt++);
      say(`${describe(end, url)}; redialling in ${(delay / 1000).toFixed(1)} s`);
      await sleep(delay, undefined, { signal: this.stopping.signal }).catch(() => {});
    }
    return null;
  }

  /**
   * Discovery is read again at every dial (the spec), for the link address and the protocols; an instance that
   * cannot be read now is dialled at the conventional address, and the dial says why it fails.
   */
  private async linkUrl(origin: string): Promise<string | Stop> {
    const discovery = await readDiscovery(origin).catch(() => null);
    if (discovery && !speaksOurProtocol(discovery)) return new Stop(PROTOCOL_MISMATCH);
    return linkUrl(origin, discovery);
  }

  private opened(socket: WebSocket): void {
    say(`linked to ${this.options.credential.instance}; saying hello`);
    socket.send(JSON.stringify(helloMessage(this.options.version)));
  }

  private fromInstance(socket: WebSocket, text: string): void {
    const frame = readFrame(text);
    if (frame.kind === "invalid") {
      say(`ignored a frame from the instance that is ${frame.why}`);
      return;
    }
    if (frame.initializeId === null) {
      this.agent.send(frame.message);
      return;
    }
    const params = "params" in frame.message ? frame.message.params : undefined;
    this.answerInitialize(socket, frame.initializeId, params).catch((err: unknown) =>
      say(`answering initialize failed: ${String(err)}`),
    );
  }

  /** Answers the instance's initialize from the agent's (first) answer, if this socket is still the link's. */
  private async answerInitialize(socket: WebSocket, id: string | number, params: unknown): Promise<void> {
    const answer = await this.initialize.answerFor(id, params);
    if (socket !== this.socket || socket.readyState !== WebSocket.OPEN) return;
    socket.send(JSON.stringify(answer));
    if ("error" in answer) return;
    this.ready = true;
    say("the link is up: the instance can drive the agent");
    this.flush(socket);
  }

  /** The agent's messages go out as they come while the link is up, and wait in the outbox while it is not. */
  async pumpAgent(): Promise<void> {
    const reader = this.agent.messages.getReader();
    for (;;) {
      const { value: message, done } = await reader.read();
      if (done) return;
      if (this.initialize.take(message)) continue;
      const socket = this.socket;
      if (this.ready && socket?.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify(message));
        continue;
      }
      if (this.outbox.push(message) && !this.dropNoted) {
        this.dropNoted = true;
        say("the link has been down long enough that the agent's oldest messages are being dropped");
      }
    }
  }

  private flush(socket: WebSocket): void {
    const { messages, dropped } = this.outbox.drain();
    for (const message of messages) socket.send(JSON.stringify(message));
    if (messages.length > 0) say(`sent ${messages.length} message(s) the agent wrote while the link was down`);
    if (dropped > 0) say(`${dropped} older message(s) of the agent were dropped while the link was down`);
    this.dropNoted = false;
  }
}

function stopFor(end: DialEnd): Stop | null {
  if (end.status === 401) return new Stop(REVOKED);
  const sentence = STOPPING_CLOSES.get(end.code);
  return sentence === undefined ? null : new Stop(sentence);
}

function describe(end: DialEnd, url: string): string {
  if (end.dead) return "no pong from the instance for two keep-alive intervals: the link is dead";
  if (end.status !== null) return `the instance refused the link with HTTP ${end.status}`;
  if (end.code === 1006 && end.error) return `could not keep a link to ${url} (${end.error})`;
  return `the link closed (${end.code}${end.reason ? ` ${end.reason}` : ""})`;
}
