/**
 * Everything live about one device while its page is open: the client socket, the link's status, the chats, the
 * open cards, which sessions are working, what is unread, each chat's transcript and command set — as signals the
 * page renders — and the duties the spec gives a client: prompts with turn ids, steer, cancel, configure, history
 * on opening a chat, catch-up after a reload, the reattach rules after a lost answer, and what the page watches.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { batch, computed, signal } from "@preact/signals";
import type { PromptResult, SessionNewResult } from "../../../src/protocol/acp";
import type { ChatInfo } from "../../../src/protocol/http-api";
import type { InstanceLink, InstanceReplay, InstanceStatus, InstanceWatch } from "../../../src/protocol/instance";
import type {
  Command,
  CommandsResult,
  ConfigureResult,
  EventParams,
  KnownEvent,
  SessionAnnounce,
  SessionHistoryResult,
  SessionStatusResult,
  SteerResult,
} from "../../../src/protocol/lembas";
import { background } from "../app/background";
import { chats as fetchChats, messageOf } from "../app/http";
import { Transcript } from "../chat/transcript";
import { Cards } from "./cards";
import { ClientSocket, INVALID_PARAMS, type IncomingRequest, RpcFailure, SocketClosed } from "./client-socket";
import { DeviceLink } from "./device-link";
import { type KeptPrompt, TurnLedger } from "./turn-ledger";

/** What a session runs with, as far as this page knows: session/new's modes and `_meta.lembas`, kept up to date. */
export type SessionSettings = Pick<SessionNewResult, "modes"> &
  NonNullable<NonNullable<SessionNewResult["_meta"]>["lembas"]>;

export interface NewSessionOptions {
  cwd: string;
  mode?: string;
  /** The instance's served name of a model. */
  lembasModel?: string;
  /** A model ref of the device's own. */
  model?: string;
  effort?: string;
}

/** Messages sent with steer that the turn ended before taking in: the composer offers them back. */
export interface Unsent {
  sessionId: string;
  texts: string[];
}

const newId = (prefix: string) => `${prefix}_${crypto.randomUUID()}`;

export class DeviceStore {
  readonly socket: ClientSocket;
  readonly link: DeviceLink;
  readonly chats = signal<ChatInfo[]>([]);
  readonly cards: Cards;
  /** Running turns by session (from status, task events, replay and this page's prompts). */
  readonly running = signal<ReadonlyMap<string, ReadonlySet<string>>>(new Map());
  readonly unread = signal<ReadonlySet<string>>(new Set());
  /** Why a deleted chat is still listed: the device has not taken the delete. */
  readonly deleteReasons = signal<ReadonlyMap<string, string>>(new Map());
  readonly settings = signal<ReadonlyMap<string, SessionSettings>>(new Map());
  readonly commands = signal<ReadonlyMap<string, readonly Command[]>>(new Map());
  readonly unsent = signal<Unsent | null>(null);
  /** The chat this page shows (null: the device's overview or a new session). */
  readonly open = signal<string | null>(null);
  /** A sentence for the person about something that went wrong (cleared by the next success). */
  readonly problem = signal("");
  /** The open terminal's ear: its output and exit, and the link going down (which closes it). */
  terminalSink: ((method: string, params: Record<string, unknown>) => void) | null = null;

  readonly busy = computed(() => {
    const sessions = new Set<string>();
    for (const [sessionId, turns] of this.running.value) if (turns.size > 0) sessions.add(sessionId);
    for (const chat of this.chats.value) if (chat.busy && chat.origin === "terminal") sessions.add(chat.session_id);
    return sessions as ReadonlySet<string>;
  });
  /** Modes seen on any session of this device, for a new session's picker. */
  readonly knownModes = computed(() => {
    for (const s of this.settings.value.values()) if (s.modes?.availableModes.length) return s.modes.availableModes;
    return [];
  });

  private readonly transcripts = new Map<string, Transcript>();
  private readonly ledger: TurnLedger;
  /** This page's prompts whose answers it is waiting for, by turnId. */
  private readonly inFlight = new Map<string, { sessionId: string }>();
  /** Sessions whose running turn missed frames on this page: shown from history once it ends. */
  private readonly holed = new Map<string, string[]>();
  /** Chats this page knows of that no list from D1 had yet. */
  private readonly unlisted = new Set<string>();
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

  chat(sessionId: string): ChatInfo | undefined {
    return this.chats.value.find((c) => c.session_id === sessionId);
  }

  /**
   * Reads the chat list again. The instance writes D1 just after it tells the sockets, so a chat this page learnt
   * of (made here, or announced) may not be listed yet: it is kept until a list has it.
   */
  async refreshChats(): Promise<void> {
    try {
      const listed = await fetchChats(this.deviceId);
      const ids = new Set(listed.map((c) => c.session_id));
      for (const id of ids) this.unlisted.delete(id);
      const kept = this.chats.value.filter((c) => this.unlisted.has(c.session_id) && !ids.has(c.session_id));
      this.chats.value = [...kept, ...listed];
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
    const open = this.open.value;
    if (open) await this.loadChat(open);
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
    const params: InstanceWatch = { sessionId: this.open.value, visible: document.visibilityState === "visible" };
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
          this.setCommands(sessionId, update.availableCommands as Command[]);
          return;
        }
        if (update.sessionUpdate === "current_mode_update") this.setSettings(sessionId, { mode: update.currentModeId });
        this.transcript(sessionId).update(update);
        this.markUnread(sessionId);
        return;
      }
      case "_lembas/event":
        if (sessionId) this.event(params as EventParams);
        return;
      case "_lembas/session/announce":
        this.announced(params as SessionAnnounce);
        return;
      case "_lembas/session/left":
        if (sessionId) this.patchChat(sessionId, { busy: false });
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
      if (card) this.markUnread(card.params.sessionId);
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
    switch (e.type) {
      case "title":
        this.patchChat(sessionId, { title: e.title });
        return;
      case "task":
        if (!e.turnId) break;
        this.setRunning(sessionId, e.turnId, e.state === "start");
        // A turn this page lost and then followed: its end is its answer.
        if (e.state === "end" && !this.inFlight.has(e.turnId)) this.ledger.remove(e.turnId);
        break;
      case "model":
        this.setSettings(sessionId, { model: e.ref, effort: e.effort });
        break;
      case "mode":
        this.setSettings(sessionId, { mode: e.mode });
        break;
      case "steered":
        if (e.ids && this.transcript(sessionId).takeSteers(e.ids)) return;
        break;
    }
    this.transcript(sessionId).event(event);
    this.markUnread(sessionId);
  }

  private announced(a: SessionAnnounce): void {
    const existing = this.chat(a.sessionId);
    const chat: ChatInfo = {
      device_id: this.deviceId,
      session_id: a.sessionId,
      title: a.title,
      cwd: a.cwd,
      origin: "terminal",
      model: a.model,
      mode: a.mode,
      busy: a.busy,
      updated_at: Date.now(),
      pending_delete: existing?.pending_delete ?? false,
    };
    // A chat pending deletion is not brought back by an announce.
    if (existing?.pending_delete) return;
    this.unlisted.add(a.sessionId);
    this.chats.value = [chat, ...this.chats.value.filter((c) => c.session_id !== a.sessionId)];
    this.setSettings(a.sessionId, { model: a.model, mode: a.mode, effort: a.effort ?? null });
  }

  private chatGone(sessionId: string): void {
    this.unlisted.delete(sessionId);
    this.chats.value = this.chats.value.filter((c) => c.session_id !== sessionId);
    this.transcripts.delete(sessionId);
    const reasons = new Map(this.deleteReasons.value);
    reasons.delete(sessionId);
    this.deleteReasons.value = reasons;
    this.cards.forget(sessionId);
  }

  private patchChat(sessionId: string, patch: Partial<ChatInfo>): void {
    this.chats.value = this.chats.value.map((c) =>
      c.session_id === sessionId ? { ...c, ...patch, updated_at: Date.now() } : c,
    );
  }

  private markUnread(sessionId: string): void {
    if (sessionId === this.open.value && document.visibilityState === "visible") return;
    if (this.unread.value.has(sessionId)) return;
    this.unread.value = new Set([...this.unread.value, sessionId]);
  }

  private setSettings(sessionId: string, patch: SessionSettings): void {
    const next = new Map(this.settings.value);
    next.set(sessionId, { ...next.get(sessionId), ...patch });
    this.settings.value = next;
  }

  private setCommands(sessionId: string, commands: readonly Command[] | undefined): void {
    const next = new Map(this.commands.value);
    next.set(
      sessionId,
      (commands ?? []).filter((c) => typeof c?.name === "string"),
    );
    this.commands.value = next;
  }

  // ---- what a person does ----

  /** Shows a chat: marks it read, tells the instance, and loads its history and commands the first time. */
  async openChat(sessionId: string | null): Promise<void> {
    this.open.value = sessionId;
    this.watch();
    if (!sessionId) return;
    if (this.unread.value.has(sessionId)) {
      const unread = new Set(this.unread.value);
      unread.delete(sessionId);
      this.unread.value = unread;
    }
    if (this.socket.isOpen && this.link.status.value) await this.loadChat(sessionId);
  }

  private async loadChat(sessionId: string): Promise<void> {
    const transcript = this.transcript(sessionId);
    if (this.link.has("commands") && !this.commands.value.has(sessionId)) {
      background(
        this.socket
          .request<CommandsResult>("_lembas/commands", { sessionId })
          // An available_commands_update that came meanwhile is newer than this answer.
          .then((res) => this.commands.value.has(sessionId) || this.setCommands(sessionId, res.commands)),
      );
    }
    if (transcript.historyLoaded) return;
    transcript.historyLoaded = true;
    try {
      if (this.link.has("sessions")) {
        const history = await this.socket.request<SessionHistoryResult>("_lembas/session/history", { sessionId });
        transcript.importHistory(history.turns, this.running.value.get(sessionId));
      } else if (!this.link.status.value?.lembas && (await this.link.canLoadSessions())) {
        // A plain ACP agent replays the session to this socket as session/update notifications.
        const chat = this.chat(sessionId);
        if (chat) await this.socket.request("session/load", { sessionId, cwd: chat.cwd, mcpServers: [] });
      }
    } catch (err) {
      transcript.historyLoaded = false;
      transcript.note(`Could not load the earlier messages: ${messageOf(err)}`, "error");
    }
  }

  async newSession(options: NewSessionOptions): Promise<string> {
    const meta: Record<string, string> = {};
    if (options.mode) meta.mode = options.mode;
    if (options.lembasModel) meta.lembas_model = options.lembasModel;
    if (options.model) meta.model = options.model;
    if (options.effort) meta.effort = options.effort;
    const res = await this.socket.request<acp.NewSessionResponse & { _meta?: { lembas?: SessionSettings } }>(
      "session/new",
      { cwd: options.cwd, mcpServers: [], ...(Object.keys(meta).length > 0 && { _meta: meta }) },
    );
    const lembas = res._meta?.lembas;
    this.setSettings(res.sessionId, {
      ...(res.modes && { modes: res.modes, mode: res.modes.currentModeId }),
      ...(lembas && { model: lembas.model, mode: lembas.mode ?? res.modes?.currentModeId, effort: lembas.effort }),
    });
    if (!this.chat(res.sessionId)) {
      this.unlisted.add(res.sessionId);
      this.chats.value = [
        {
          device_id: this.deviceId,
          session_id: res.sessionId,
          title: null,
          cwd: options.cwd,
          origin: "web",
          model: lembas?.model ?? null,
          mode: lembas?.mode ?? null,
          busy: false,
          updated_at: Date.now(),
          pending_delete: false,
        },
        ...this.chats.value,
      ];
    }
    this.transcript(res.sessionId).historyLoaded = true;
    return res.sessionId;
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

  async setMode(sessionId: string, modeId: string): Promise<void> {
    await this.socket.request("session/set_mode", { sessionId, modeId });
    this.setSettings(sessionId, { mode: modeId });
  }

  async configure(sessionId: string, change: { model?: string; effort?: string }): Promise<void> {
    const res = await this.socket.request<ConfigureResult>("_lembas/configure", { sessionId, ...change });
    this.setSettings(sessionId, { model: res.model, effort: res.effort });
  }

  async rename(sessionId: string, title: string): Promise<void> {
    const res = await this.socket.request<{ title: string }>("_lembas/session/title", { sessionId, title });
    this.patchChat(sessionId, { title: res.title });
  }

  /** Deletes a chat: gone when the device takes it, listed as pending (with why) until it does. */
  async deleteChat(sessionId: string): Promise<void> {
    let reason: string | null = null;
    try {
      const res = await this.socket.request<{ deleted: boolean; pending?: boolean; reason?: string }>(
        "_lembas/session/delete",
        { sessionId },
      );
      if (res.pending) reason = res.reason ?? "not taken yet";
    } catch (err) {
      const data = err instanceof RpcFailure ? (err.error.data as { pending?: boolean; reason?: string }) : undefined;
      if (!data?.pending) throw err;
      reason = data.reason ?? messageOf(err);
    }
    if (reason === null) {
      this.chatGone(sessionId);
      return;
    }
    this.patchChat(sessionId, { pending_delete: true });
    this.deleteReasons.value = new Map(this.deleteReasons.value).set(sessionId, reason);
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
