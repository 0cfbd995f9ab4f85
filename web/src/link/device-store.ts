/**
 * Everything live about one device while its page is open: the client socket, the link's status, the chats, the
 * open cards, which sessions are working, what is unread, each chat's transcript and command set — as signals the
 * page renders — and the duties the spec gives a client: prompts with turn ids, steer, cancel, configure, history
 * on opening a chat, catch-up after a reload, the reattach rules after a lost answer, and what the page watches.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { batch, computed, signal } from "@preact/signals";
import type { PromptResult } from "../../../src/protocol/acp";
import type { InstanceLink, InstanceReplay, InstanceStatus, InstanceWatch } from "../../../src/protocol/instance";
import type {
  Command,
  EventParams,
  KnownEvent,
  SessionAnnounce,
  SessionHistoryResult,
  SessionStatusResult,
  SteerResult,
} from "../../../src/protocol/lembas";
import { background } from "../app/background";
import { messageOf } from "../app/http";
import { Transcript } from "../chat/transcript";
import { Cards } from "./cards";
import { Chats, type NewSessionOptions } from "./chats";
import { ClientSocket, INVALID_PARAMS, type IncomingRequest, RpcFailure, SocketClosed } from "./client-socket";
import { DeviceLink } from "./device-link";
import { type KeptPrompt, TurnLedger } from "./turn-ledger";

/** Messages sent with steer that the turn ended before taking in: the composer offers them back. */
export interface Unsent {
  sessionId: string;
  texts: string[];
}

const newId = (prefix: string) => `${prefix}_${crypto.randomUUID()}`;

export class DeviceStore {
  readonly socket: ClientSocket;
  readonly link: DeviceLink;
  readonly chats: Chats;
  readonly cards: Cards;
  /** Running turns by session (from status, task events, replay and this page's prompts). */
  readonly running = signal<ReadonlyMap<string, ReadonlySet<string>>>(new Map());
  readonly unsent = signal<Unsent | null>(null);
  /** A sentence for the person about something that went wrong (cleared by the next success). */
  readonly problem = signal("");
  /** The open terminal's ear: its output and exit, and the link going down (which closes it). */
  terminalSink: ((method: string, params: Record<string, unknown>) => void) | null = null;

  /** Sessions working: a turn running, or a terminal on the device busy with its session. */
  readonly busy = computed(() => {
    const sessions = new Set<string>();
    for (const [sessionId, turns] of this.running.value) if (turns.size > 0) sessions.add(sessionId);
    for (const chat of this.chats.list.value)
      if (chat.busy && chat.origin === "terminal") sessions.add(chat.session_id);
    return sessions as ReadonlySet<string>;
  });
  private readonly transcripts = new Map<string, Transcript>();
  private readonly ledger: TurnLedger;
  /** This page's prompts whose answers it is waiting for, by turnId. */
  private readonly inFlight = new Map<string, { sessionId: string }>();
  /** Sessions whose running turn missed frames on this page: shown from history once it ends. */
  private readonly holed = new Map<string, string[]>();
  private readonly onVisibility = () => {
    this.watch();
    if (document.visibilityState === "visible") this.socket.reconnect();
  };

  constructor(readonly deviceId: string) {
    this.ledger = new TurnLedger(deviceId);
    this.socket = new ClientSocket(deviceId, {
      open: () => background(this.opened()),
      closed: (code) => this.closed(code),
      notification: (method, params) => this.notification(method, params),
      request: (request) => this.request(request),
      gap: (sessionId) => this.missed(sessionId),
    });
    this.link = new DeviceLink(this.socket);
    this.chats = new Chats(deviceId, this.socket);
    this.cards = new Cards(this.socket);
  }

  start(): void {
    this.socket.connect();
    background(this.refreshChats());
    document.addEventListener("visibilitychange", this.onVisibility);
  }

  stop(): void {
    document.removeEventListener("visibilitychange", this.onVisibility);
    this.socket.close();
  }

  transcript(sessionId: string): Transcript {
    let t = this.transcripts.get(sessionId);
    if (!t) {
      t = new Transcript("Conversation");
      this.transcripts.set(sessionId, t);
    }
    return t;
  }

  private async refreshChats(): Promise<void> {
    try {
      await this.chats.refresh();
    } catch (err) {
      this.problem.value = messageOf(err);
    }
  }

  // ---- the socket's life ----

  private async opened(): Promise<void> {
    this.link.opened();
    this.watch();
    try {
      this.applyStatus(await this.socket.request<InstanceStatus>("_instance/status"));
    } catch (err) {
      this.problem.value = messageOf(err);
      return;
    }
    await this.refreshChats();
    const shown = this.chats.shown.value;
    if (shown) await this.loadChat(shown);
    await this.reattach();
  }

  private closed(code: number): void {
    batch(() => {
      this.link.closed();
      this.terminalSink?.("socket_closed", {});
      this.cards.clear();
      for (const [turnId, prompt] of this.inFlight) this.transcript(prompt.sessionId).markLost(turnId);
      this.inFlight.clear();
      if (code === 4404) this.problem.value = "This device was revoked.";
      if (code === 4403) this.problem.value = "Your sign-in ended; sign in again.";
    });
  }

  private applyStatus(status: InstanceStatus): void {
    batch(() => {
      this.link.setStatus(status);
      const running = new Map<string, Set<string>>();
      for (const turn of status.turns) {
        const set = running.get(turn.sessionId) ?? new Set<string>();
        set.add(turn.turnId ?? "");
        running.set(turn.sessionId, set);
      }
      // This page's own prompts are running too, whatever the status says.
      for (const [turnId, prompt] of this.inFlight) {
        const set = running.get(prompt.sessionId) ?? new Set<string>();
        set.add(turnId);
        running.set(prompt.sessionId, set);
      }
      this.running.value = running;
      this.refillEnded();
    });
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
   * Frames of a session's running turn did not reach this page (a catch-up that could not keep them all, an instance
   * that restarted): the turn is marked, and once it ends it is shown from the device's history instead.
   */
  private missed(sessionId: string): void {
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

  /** Tells the instance what this page shows: the open chat, and whether the page is visible. */
  watch(): void {
    if (!this.socket.isOpen) return;
    const params: InstanceWatch = {
      sessionId: this.chats.shown.value,
      visible: document.visibilityState === "visible",
    };
    // An instance without it answers -32601; either way nothing here depends on the answer.
    this.socket.request("_instance/watch", params).catch(() => {});
  }

  // ---- what arrives ----

  private notification(method: string, params: unknown): void {
    const p = params as Record<string, unknown>;
    const sessionId = typeof p.sessionId === "string" ? p.sessionId : null;
    switch (method) {
      case "_instance/link":
        this.linkChanged(params as InstanceLink);
        return;
      case "_instance/replay":
        this.replay(params as InstanceReplay);
        return;
      case "session/update": {
        if (!sessionId) return;
        const update = (params as acp.SessionNotification).update;
        if (update.sessionUpdate === "available_commands_update") {
          this.chats.setCommands(sessionId, update.availableCommands as Command[]);
          return;
        }
        batch(() => {
          if (update.sessionUpdate === "current_mode_update")
            this.chats.setSettings(sessionId, { mode: update.currentModeId });
          this.transcript(sessionId).update(update);
          this.chats.markUnread(sessionId);
        });
        return;
      }
      case "_lembas/event":
        if (sessionId) this.event(params as EventParams);
        return;
      case "_lembas/session/announce":
        this.chats.announced(params as SessionAnnounce);
        return;
      case "_lembas/session/left":
        if (sessionId) this.chats.patch(sessionId, { busy: false });
        return;
      case "_lembas/session/deleted":
        if (sessionId) this.chatGone(sessionId);
        return;
      case "_lembas/permission/settled":
        this.cards.settled(p.sessionId, p.toolCallId);
        return;
      case "_lembas/terminal/output":
      case "_lembas/terminal/exit":
        this.terminalSink?.(method, p);
        return;
      case "$/cancel_request":
        // The instance withdrew a request it made of this page (a card that ended).
        this.cards.withdrawn(p.requestId);
        return;
      default:
        return;
    }
  }

  private request(request: IncomingRequest): void {
    batch(() => {
      const card = this.cards.requested(request);
      if (card) this.chats.markUnread(card.params.sessionId);
    });
  }

  private linkChanged(link: InstanceLink): void {
    if (link.link === "up") {
      background(
        this.socket.request<InstanceStatus>("_instance/status").then(
          async (status) => {
            this.applyStatus(status);
            await this.reattach();
          },
          () => {},
        ),
      );
    } else {
      this.link.down();
      // Every terminal closes with the link.
      this.terminalSink?.("link_down", {});
    }
  }

  /**
   * A catch-up: the turns it is of run, and are rebuilt from its frames (a socket dialled again gets them from the
   * start); frames it could not keep show as a gap in their numbers (`missed`).
   */
  private replay(notice: InstanceReplay): void {
    for (const turnId of notice.turnIds) this.setRunning(notice.sessionId, turnId ?? "", true);
    this.transcript(notice.sessionId).restart(notice.turnIds.filter((t) => t !== null));
  }

  private event({ sessionId, event }: EventParams): void {
    const e = event as KnownEvent;
    batch(() => {
      switch (e.type) {
        case "title":
          this.chats.patch(sessionId, { title: e.title });
          return;
        case "task":
          if (!e.turnId) break;
          this.setRunning(sessionId, e.turnId, e.state === "start");
          // A turn this page lost and then followed: its end is its answer.
          if (e.state === "end" && !this.inFlight.has(e.turnId)) this.ledger.remove(e.turnId);
          break;
        case "model":
          this.chats.setSettings(sessionId, { model: e.ref, effort: e.effort });
          break;
        case "mode":
          this.chats.setSettings(sessionId, { mode: e.mode });
          break;
        case "steered":
          if (e.ids && this.transcript(sessionId).takeSteers(e.ids)) return;
          break;
      }
      this.transcript(sessionId).event(event);
      this.chats.markUnread(sessionId);
    });
  }

  private chatGone(sessionId: string): void {
    batch(() => {
      this.chats.forget(sessionId);
      this.transcripts.delete(sessionId);
      this.cards.forget(sessionId);
    });
  }

  // ---- what a person does ----

  /** Shows a chat: marks it read, tells the instance, and loads its history and commands the first time. */
  async openChat(sessionId: string | null): Promise<void> {
    this.chats.show(sessionId);
    this.watch();
    if (sessionId && this.socket.isOpen && this.link.status.value) await this.loadChat(sessionId);
  }

  private async loadChat(sessionId: string): Promise<void> {
    const transcript = this.transcript(sessionId);
    if (this.link.has("commands")) this.chats.loadCommands(sessionId);
    if (transcript.historyLoaded) return;
    transcript.historyLoaded = true;
    try {
      if (this.link.has("sessions")) {
        const history = await this.socket.request<SessionHistoryResult>("_lembas/session/history", { sessionId });
        transcript.importHistory(history.turns, this.running.value.get(sessionId));
      } else if (!this.link.status.value?.lembas && (await this.link.canLoadSessions())) {
        // A plain ACP agent replays the session to this socket as session/update notifications.
        const chat = this.chats.get(sessionId);
        if (chat) await this.socket.request("session/load", { sessionId, cwd: chat.cwd, mcpServers: [] });
      }
    } catch (err) {
      transcript.historyLoaded = false;
      transcript.note(`Could not load the earlier messages: ${messageOf(err)}`, "error");
    }
  }

  async newSession(options: NewSessionOptions): Promise<string> {
    const sessionId = await this.chats.create(options);
    // A session made here has no earlier messages to load.
    this.transcript(sessionId).historyLoaded = true;
    return sessionId;
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
    this.ledger.add({ sessionId, turnId, blocks, text: shown.text, attachments: shown.attachments });
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
      this.setRunning(sessionId, turnId, false);
      transcript.finish(turnId, result);
      const unsent = result._meta?.lembas?.unsent;
      if (unsent?.length) this.unsent.value = { sessionId, texts: unsent };
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

  /** Deletes a chat: gone when the device takes it, listed as pending (with why) until it does. */
  async deleteChat(sessionId: string): Promise<void> {
    if (await this.chats.delete(sessionId)) this.chatGone(sessionId);
  }

  /**
   * The spec's reattach rules, for each prompt this page sent whose answer it lost (a reload, a dropped socket):
   * ask the session's status, then follow a running turn, wait for a queued one, import a finished one from
   * history, or send an unknown one again under its turn id (the device deduplicates). After the device's own link
   * dropped, the prompts still open are asked after too (followOpen).
   */
  private async reattach(): Promise<void> {
    for (const kept of this.ledger.all()) {
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
    transcript.followed(turnId, "sent again");
    await this.runPrompt(sessionId, turnId, kept.blocks);
  }
}
