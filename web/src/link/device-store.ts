/**
 * Everything live about one device while its page is open, in the parts the server has too: the socket and the
 * device's link (`link`), its chats (`chats`), their turns and transcripts (`turns`), and the cards waiting
 * (`cards`). The store owns the socket: it sends each notification to the parts it concerns, changing them in one
 * batch, and does what spans them — the socket opening and closing, opening a chat (its history the first time),
 * making and deleting one, and telling the instance what the page watches.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { batch, computed, signal } from "@preact/signals";
import type {
  CardDecision,
  InstanceLink,
  InstanceReplay,
  InstanceStatus,
  InstanceWatch,
} from "../../../src/protocol/instance";
import type {
  Command,
  EventParams,
  KnownEvent,
  SessionAnnounce,
  SessionHistoryResult,
} from "../../../src/protocol/lembas";
import { background } from "../app/background";
import { messageOf } from "../app/http";
import { Cards } from "./cards";
import { Chats, type NewSessionOptions } from "./chats";
import { ClientSocket, type IncomingRequest } from "./client-socket";
import { DeviceLink } from "./device-link";
import { Kept } from "./kept";
import { Turns } from "./turns";

export class DeviceStore {
  readonly socket: ClientSocket;
  readonly link: DeviceLink;
  readonly chats: Chats;
  readonly turns: Turns;
  readonly cards: Cards;
  readonly kept: Kept;
  /** A sentence for the person about something that went wrong. */
  readonly problem = signal("");
  /** The open terminal's ear: its output and exit, and the link going down (which closes it). */
  terminalSink: ((method: string, params: Record<string, unknown>) => void) | null = null;

  /** Sessions working: a turn running, or a terminal on the device busy with its session. */
  readonly busy = computed(() => {
    const sessions = new Set<string>();
    for (const [sessionId, turns] of this.turns.running.value) if (turns.size > 0) sessions.add(sessionId);
    for (const chat of this.chats.list.value)
      if (chat.busy && chat.origin === "terminal") sessions.add(chat.session_id);
    return sessions as ReadonlySet<string>;
  });

  private readonly onVisibility = () => {
    this.watch();
    if (document.visibilityState === "visible") this.socket.reconnect();
  };

  constructor(readonly deviceId: string) {
    this.socket = new ClientSocket(deviceId, {
      open: () => background(this.opened()),
      closed: (code) => this.closed(code),
      notification: (method, params) => this.notification(method, params),
      request: (request) => this.request(request),
      gap: (sessionId) => this.turns.missed(sessionId),
    });
    this.link = new DeviceLink(this.socket);
    this.chats = new Chats(deviceId, this.socket);
    this.turns = new Turns(deviceId, this.socket, this.link);
    this.cards = new Cards(this.socket);
    this.kept = new Kept(this.socket);
    // The instance keeps a turn as it ends: the chat list's last message follows.
    this.turns.onTurnEnded = () => background(this.kept.refresh().catch(() => {}));
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
    // The chat shown opens from its kept turns, which need nothing the status says: asked beside it.
    const shown = this.chats.shown.value;
    const kept = shown && !this.kept.next.value.has(shown) ? this.loadKept(shown) : undefined;
    try {
      try {
        this.applyStatus(await this.socket.request<InstanceStatus>("_instance/status"));
      } catch (err) {
        this.problem.value = messageOf(err);
        return;
      }
      // Asked at once, not one after another: the chat shown waits for its own requests alone.
      const listed = this.refreshChats();
      // An instance without kept turns answers -32601: the chat list then shows no last messages.
      const summaries = this.kept.refresh().catch(() => {});
      if (shown) await this.loadChat(shown, listed, kept);
      await Promise.all([listed, summaries]);
    } finally {
      // What the page's inline script asked that the chat did not take (its history, the device away) is stale now.
      this.socket.forgetEarly();
    }
    await this.turns.reattach();
  }

  private closed(code: number): void {
    batch(() => {
      this.link.closed();
      this.terminalSink?.("socket_closed", {});
      this.cards.clear();
      this.turns.answersLost();
      if (code === 4404) this.problem.value = "This device was revoked.";
      if (code === 4403) this.problem.value = "Your sign-in ended; sign in again.";
    });
  }

  private applyStatus(status: InstanceStatus): void {
    batch(() => {
      this.link.setStatus(status);
      this.turns.runningFromStatus(status);
    });
  }

  /** Tells the instance what this page shows: the open chat, and whether the page is visible. */
  private watch(): void {
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
        this.turns.replay(params as InstanceReplay);
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
          this.turns.transcript(sessionId).update(update);
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
      case "_instance/card/decided": {
        const decision = params as CardDecision;
        const here = this.cards.answeredByThisPage(decision);
        this.turns.transcript(decision.sessionId).decided(decision, here);
        return;
      }
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
            // A chat opened while the device was away gets its older turns from history now.
            const shown = this.chats.shown.value;
            if (shown) await this.loadChat(shown);
            await this.turns.reattach();
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

  private event({ sessionId, event }: EventParams): void {
    const e = event as KnownEvent;
    batch(() => {
      switch (e.type) {
        case "title":
          this.chats.patch(sessionId, { title: e.title });
          return;
        case "model":
          this.chats.setSettings(sessionId, { model: e.ref, effort: e.effort });
          break;
        case "mode":
          this.chats.setSettings(sessionId, { mode: e.mode });
          break;
      }
      if (this.turns.event(sessionId, event)) this.chats.markUnread(sessionId);
    });
  }

  private chatGone(sessionId: string): void {
    batch(() => {
      this.chats.forget(sessionId);
      this.kept.forget(sessionId);
      this.turns.forget(sessionId);
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

  /**
   * `listed`: the chat list being read, which a plain agent's replay needs (the chat's folder); `kept`: the chat's
   * kept turns being read already.
   */
  private async loadChat(
    sessionId: string,
    listed: Promise<void> = Promise.resolve(),
    kept?: Promise<void>,
  ): Promise<void> {
    const transcript = this.turns.transcript(sessionId);
    this.chats.loadSettings(sessionId);
    // Before the replay's turns, if there is one, which then take their place.
    await kept;
    // A plain ACP agent replays the whole session on session/load, with no turn ids to join kept turns by: while it
    // is linked its replay is the transcript, and the kept turns are for when it is not.
    const replays =
      !this.link.status.value?.lembas &&
      this.link.up.value &&
      !transcript.historyLoaded &&
      (await this.link.canLoadSessions());
    // What the instance kept opens the chat at once, whether the device is linked or not.
    if (!replays && !this.kept.next.value.has(sessionId)) await this.loadKept(sessionId);
    // The device's own history fills in older turns once it is linked.
    if (!this.link.up.value) return;
    if (this.link.has("commands")) this.chats.loadCommands(sessionId);
    if (transcript.historyLoaded) return;
    transcript.historyLoaded = true;
    try {
      if (this.link.has("sessions")) {
        const history = await this.socket.request<SessionHistoryResult>("_lembas/session/history", { sessionId });
        transcript.importHistory(history.turns, this.turns.running.value.get(sessionId));
      } else if (replays) {
        // The replay comes to this socket as session/update notifications; kept turns shown meanwhile make way.
        transcript.dropKept();
        this.kept.hide(sessionId);
        await listed;
        const chat = this.chats.get(sessionId);
        if (chat) await this.socket.request("session/load", { sessionId, cwd: chat.cwd, mcpServers: [] });
      }
    } catch (err) {
      transcript.historyLoaded = false;
      transcript.note(`Could not load the earlier messages: ${messageOf(err)}`, "error");
    }
  }

  /** The chat's newest kept turns into its transcript. */
  private loadKept(sessionId: string): Promise<void> {
    const transcript = this.turns.transcript(sessionId);
    return this.kept.loadPage(sessionId, transcript).catch((err: unknown) => {
      transcript.note(`Could not load the kept messages: ${messageOf(err)}`, "error");
    });
  }

  async newSession(options: NewSessionOptions): Promise<string> {
    const sessionId = await this.chats.create(options);
    // A session made here has no earlier messages to load.
    this.turns.transcript(sessionId).historyLoaded = true;
    return sessionId;
  }

  /** Deletes a chat: gone when the device takes it, listed as pending (with why) until it does. */
  async deleteChat(sessionId: string): Promise<void> {
    if (await this.chats.delete(sessionId)) this.chatGone(sessionId);
  }
}
