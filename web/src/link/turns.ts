/**
 * The turns of the device's sessions as this page follows them: which run, each session's transcript, and the
 * spec's duties for them — prompts with turn ids, steer, cancel, catch-up (a replay, frames missed), and the reattach
 * rules after a lost answer, for which the prompts sent are kept in the ledger until their answers come.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { batch, signal } from "@preact/signals";
import type { PromptResult } from "../../../src/protocol/acp";
import type { InstanceReplay, InstanceStatus } from "../../../src/protocol/instance";
import type {
  EventParams,
  KnownEvent,
  SessionHistoryResult,
  SessionStatusResult,
  SteerResult,
} from "../../../src/protocol/lembas";
import { background } from "../app/background";
import { messageOf } from "../app/http";
import { Transcript } from "../chat/transcript";
import { type ClientSocket, INVALID_PARAMS, RpcFailure, SocketClosed } from "./client-socket";
import type { DeviceLink } from "./device-link";
import { type KeptPrompt, TurnLedger } from "./turn-ledger";

const newId = (prefix: string) => `${prefix}_${crypto.randomUUID()}`;

/** A prompt the page could not send again whole, back for the composer: its text, and why. */
export interface GivenBack {
  text: string;
  reason: string;
}

export class Turns {
  /** Running turns by session (from status, task events, replay and this page's prompts). */
  readonly running = signal<ReadonlyMap<string, ReadonlySet<string>>>(new Map());
  /** Prompts for each session's composer to take back (`takeBack`). */
  readonly givenBack = signal<ReadonlyMap<string, GivenBack>>(new Map());
  /** Told when one of the session's turns ended (its task end, or this page's prompt answered). */
  onTurnEnded: (sessionId: string) => void = () => {};

  private readonly transcripts = new Map<string, Transcript>();
  private readonly ledger: TurnLedger;
  /** This page's prompts whose answers it is waiting for, by turnId. */
  private readonly inFlight = new Map<string, { sessionId: string }>();
  /** Sessions whose running turn missed frames on this page: shown from history once it ends. */
  private readonly holed = new Map<string, string[]>();

  constructor(
    deviceId: string,
    private readonly socket: ClientSocket,
    private readonly link: DeviceLink,
  ) {
    this.ledger = new TurnLedger(deviceId);
  }

  transcript(sessionId: string): Transcript {
    let t = this.transcripts.get(sessionId);
    if (!t) {
      t = new Transcript("Conversation");
      this.transcripts.set(sessionId, t);
    }
    return t;
  }

  /** The prompt given back to the session's composer, once. */
  takeBack(sessionId: string): GivenBack | undefined {
    const given = this.givenBack.value.get(sessionId);
    if (given) {
      const rest = new Map(this.givenBack.value);
      rest.delete(sessionId);
      this.givenBack.value = rest;
    }
    return given;
  }

  /** The chat was deleted. */
  forget(sessionId: string): void {
    this.transcripts.delete(sessionId);
  }

  /** The running turns, from the device's status: those it lists, and this page's own prompts whatever it says. */
  runningFromStatus(status: InstanceStatus): void {
    const running = new Map<string, Set<string>>();
    for (const turn of status.turns) {
      const set = running.get(turn.sessionId) ?? new Set<string>();
      set.add(turn.turnId ?? "");
      running.set(turn.sessionId, set);
    }
    for (const [turnId, prompt] of this.inFlight) {
      const set = running.get(prompt.sessionId) ?? new Set<string>();
      set.add(turnId);
      running.set(prompt.sessionId, set);
    }
    this.running.value = running;
    this.refillEnded();
  }

  /** The socket closed: the answers of this page's prompts went with it. */
  answersLost(): void {
    for (const [turnId, prompt] of this.inFlight) this.transcript(prompt.sessionId).markLost(turnId);
    this.inFlight.clear();
  }

  private setRunning(sessionId: string, turnId: string, on: boolean): void {
    const next = new Map(this.running.value);
    const set = new Set(next.get(sessionId) ?? []);
    if (on) set.add(turnId);
    else {
      set.delete(turnId);
      // A turn the device ran without an id this page knows (a status from before): it is over too.
      if (set.has("")) set.delete("");
    }
    next.set(sessionId, set);
    this.running.value = next;
    if (!on && set.size === 0) this.refillEnded();
  }

  /**
   * A catch-up: the turns it is of run, and are rebuilt from its frames (a socket dialled again gets them from the
   * start); frames it could not keep show as a gap in their numbers (`missed`).
   */
  replay(notice: InstanceReplay): void {
    batch(() => {
      for (const turnId of notice.turnIds) this.setRunning(notice.sessionId, turnId ?? "", true);
    });
    this.transcript(notice.sessionId).restart(notice.turnIds.filter((t) => t !== null));
  }

  /**
   * Frames of a session's running turn did not reach this page (a catch-up that could not keep them all, an instance
   * that restarted): the turn is marked, and once it ends it is shown from the device's history instead.
   */
  missed(sessionId: string): void {
    const turnIds = [...(this.running.value.get(sessionId) ?? [])];
    this.holed.set(sessionId, [...new Set([...(this.holed.get(sessionId) ?? []), ...turnIds])]);
    this.transcript(sessionId).missed(turnIds);
  }

  /** Sessions whose turns that missed frames have all ended: their answers come from history. */
  private refillEnded(): void {
    for (const [sessionId, turnIds] of this.holed) {
      if ((this.running.value.get(sessionId)?.size ?? 0) > 0) continue;
      this.holed.delete(sessionId);
      background(this.refill(sessionId, turnIds));
    }
  }

  private async refill(sessionId: string, turnIds: readonly string[]): Promise<void> {
    // A device without history: the turn's note says what is missing.
    if (!this.link.has("sessions")) return;
    const transcript = this.transcript(sessionId);
    try {
      const history = await this.socket.request<SessionHistoryResult>("_lembas/session/history", { sessionId });
      transcript.importHistory(history.turns, this.running.value.get(sessionId));
      for (const turnId of turnIds) if (turnId) transcript.finish(turnId, null);
    } catch (err) {
      transcript.note(`Could not load this turn from the device's history: ${messageOf(err)}`, "error");
    }
  }

  /** An engine event of a session's, into its transcript: false when there was nothing new to show. */
  event(sessionId: string, event: EventParams["event"]): boolean {
    const e = event as KnownEvent;
    switch (e.type) {
      case "task":
        if (!e.turnId) break;
        this.setRunning(sessionId, e.turnId, e.state === "start");
        // A turn this page lost and then followed: its end is its answer.
        if (e.state === "end" && !this.inFlight.has(e.turnId)) this.ledger.remove(e.turnId);
        if (e.state === "end") this.onTurnEnded(sessionId);
        break;
      case "steered":
        if (e.ids && this.transcript(sessionId).takeSteers(e.ids)) return false;
        break;
    }
    this.transcript(sessionId).event(event);
    return true;
  }

  /** Sends a prompt as a new turn; resolves when the turn's answer came (or was lost). */
  async prompt(
    sessionId: string,
    blocks: acp.ContentBlock[],
    shown: { text: string; attachments: KeptPrompt["attachments"] },
    turnId = newId("turn"),
  ): Promise<void> {
    const transcript = this.transcript(sessionId);
    transcript.prompt(turnId, shown.text, shown.attachments);
    await this.ledger.add({ sessionId, turnId, blocks, text: shown.text, attachments: shown.attachments });
    if (!this.link.up.value) {
      // Kept in the ledger: when the device links again, reattach finds it unknown there and sends it.
      transcript.note("The device is offline: this message is sent when it links again.", "note reattach");
      return;
    }
    await this.runPrompt(sessionId, turnId, blocks);
  }

  private async runPrompt(sessionId: string, turnId: string, blocks: acp.ContentBlock[]): Promise<void> {
    const transcript = this.transcript(sessionId);
    this.inFlight.set(turnId, { sessionId });
    this.setRunning(sessionId, turnId, true);
    try {
      const result = await this.socket.request<PromptResult>("session/prompt", {
        sessionId,
        prompt: blocks,
        ...(this.link.has("turns") && { _meta: { lembas: { turnId } } }),
      });
      this.inFlight.delete(turnId);
      this.ledger.remove(turnId);
      batch(() => {
        this.setRunning(sessionId, turnId, false);
        transcript.finish(turnId, result);
      });
      this.onTurnEnded(sessionId);
      const unsent = result._meta?.lembas?.unsent;
      if (unsent?.length) await this.sendUnsent(sessionId, unsent);
    } catch (err) {
      this.inFlight.delete(turnId);
      if (err instanceof SocketClosed) {
        // The answer went with the socket; the reattach rules find out what became of the turn.
        transcript.markLost(turnId);
        return;
      }
      this.ledger.remove(turnId);
      this.setRunning(sessionId, turnId, false);
      transcript.note(messageOf(err), "error");
      transcript.finish(turnId, null);
    }
  }

  /**
   * Steer messages the turn ended before taking in (`unsent`): sent next, as one prompt (the spec), and the person
   * is told so where the steer notes were.
   */
  private async sendUnsent(sessionId: string, texts: readonly string[]): Promise<void> {
    const transcript = this.transcript(sessionId);
    transcript.steersUnsent(texts);
    const what = texts.length === 1 ? "A message" : `${texts.length} messages`;
    transcript.note(`${what} the turn ended before taking in — sent as the next message.`, "note unsent");
    const text = texts.join("\n\n");
    await this.prompt(sessionId, [{ type: "text", text }], { text, attachments: [] });
  }

  /** A message for the running turn (capability steer); a prompt when nothing runs (the spec's -32602). */
  async steer(sessionId: string, text: string): Promise<void> {
    const messageId = newId("steer");
    const transcript = this.transcript(sessionId);
    transcript.steerSent(messageId, text);
    try {
      await this.socket.request<SteerResult>("_lembas/steer", { sessionId, text, messageId });
    } catch (err) {
      transcript.steerDropped(messageId);
      if (err instanceof RpcFailure && err.code === INVALID_PARAMS) {
        await this.prompt(sessionId, [{ type: "text", text }], { text, attachments: [] });
        return;
      }
      throw err;
    }
  }

  /** Stops the session's running turn: the device ends it and the prompt is answered `cancelled`. */
  cancel(sessionId: string): void {
    this.socket.notify("session/cancel", { sessionId });
  }

  /**
   * The spec's reattach rules, for each prompt this page sent whose answer it lost (a reload, a dropped socket):
   * ask the session's status, then follow a running turn, wait for a queued one, import a finished one from
   * history, or send an unknown one again under its turn id (the device deduplicates). After the device's own link
   * dropped, the prompts still open are asked after too (followOpen).
   */
  async reattach(): Promise<void> {
    for (const kept of this.ledger.pending()) {
      const open = this.inFlight.has(kept.turnId);
      const transcript = this.transcript(kept.sessionId);
      if (!open && !transcript.knows(kept.turnId)) transcript.prompt(kept.turnId, kept.text, kept.attachments);
      if (!this.link.has("status") || !this.link.has("turns")) {
        // Without turns the instance fails an open prompt when the link drops; its answer says so.
        if (open) continue;
        this.ledger.remove(kept.turnId);
        transcript.markLost(kept.turnId);
        transcript.note("The answer to this message was lost; the device cannot say whether it ran.", "error");
        continue;
      }
      try {
        await (open ? this.followOpen(kept, transcript) : this.reattachOne(kept, transcript));
      } catch (err) {
        if (err instanceof SocketClosed) return;
        transcript.note(`Could not find out what became of this message: ${messageOf(err)}`, "error");
      }
    }
  }

  /**
   * A prompt whose request stayed open while the device's link was down: the instance sends it again itself under
   * its turn id and its answer still comes here, so the page only says what the device is doing with it.
   */
  private async followOpen({ sessionId, turnId }: KeptPrompt, transcript: Transcript): Promise<void> {
    const status = await this.socket.request<SessionStatusResult>("_lembas/session/status", { sessionId });
    if (status.turnId === turnId) transcript.followed(turnId, "running");
    else if (status.queued?.includes(turnId)) transcript.followed(turnId, "queued");
  }

  private async reattachOne(kept: KeptPrompt, transcript: Transcript): Promise<void> {
    const { sessionId, turnId } = kept;
    const status = await this.socket.request<SessionStatusResult>("_lembas/session/status", { sessionId });
    if (status.turnId === turnId) {
      this.setRunning(sessionId, turnId, true);
      transcript.followed(turnId, "running");
      return;
    }
    if (status.queued?.includes(turnId)) {
      this.setRunning(sessionId, turnId, true);
      transcript.followed(turnId, "queued");
      return;
    }
    const history = this.link.has("sessions")
      ? await this.socket.request<SessionHistoryResult>("_lembas/session/history", { sessionId })
      : null;
    const done =
      status.lastTurnId === turnId || history?.turns.some((t) => t.role === "user" && t.turnId === turnId) === true;
    if (done) {
      this.ledger.remove(turnId);
      this.setRunning(sessionId, turnId, false);
      transcript.markLost(turnId);
      if (history) transcript.importHistory(history.turns, this.running.value.get(sessionId));
      transcript.finish(turnId, null);
      return;
    }
    const blocks = await this.ledger.blocks(kept);
    if (!blocks) {
      this.giveBack(kept, transcript);
      return;
    }
    transcript.followed(turnId, "sent again");
    await this.runPrompt(sessionId, turnId, blocks);
  }

  /**
   * A prompt the device never got whose blocks this page could not keep: rather than send it again without its
   * attachments, its text goes back to the composer with a sentence saying what to attach again.
   */
  private giveBack(kept: KeptPrompt, transcript: Transcript): void {
    this.ledger.remove(kept.turnId);
    transcript.followed(kept.turnId, "given back");
    const names = kept.attachments.map((a) => a.name).join(", ");
    const reason = names
      ? `A message the device never got was not sent again: this page could not keep its attachments (${names}). Its text is back here; attach them again and send it.`
      : "A message the device never got was not sent again: this page could not keep it whole. Its text is back here to send again.";
    const next = new Map(this.givenBack.value);
    const earlier = next.get(kept.sessionId);
    next.set(
      kept.sessionId,
      earlier ? { text: `${earlier.text}\n\n${kept.text}`, reason } : { text: kept.text, reason },
    );
    this.givenBack.value = next;
  }
}
