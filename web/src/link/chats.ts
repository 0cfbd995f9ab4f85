/**
 * The device's chats as this page knows them: the list (D1's, and the chats learnt of since), the one shown, the
 * unread, and each session's settings and commands; making, renaming, configuring and deleting a chat.
 */
import type * as acp from "@agentclientprotocol/sdk";
import { batch, computed, signal } from "@preact/signals";
import type { SessionNewResult } from "../../../src/protocol/acp";
import type { ChatInfo } from "../../../src/protocol/http-api";
import type { SessionSettingsKept } from "../../../src/protocol/instance";
import type { Command, CommandsResult, ConfigureResult, SessionAnnounce } from "../../../src/protocol/lembas";
import { background } from "../app/background";
import { chats as fetchChats, messageOf } from "../app/http";
import { type ClientSocket, RpcFailure } from "./client-socket";

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

export class Chats {
  readonly list = signal<ChatInfo[]>([]);
  /** Whether a list from D1 has been read: until then a chat not in the list may still be one. */
  readonly listed = signal(false);
  /** The chat this page shows (null: the device's overview or a new session). */
  readonly shown = signal<string | null>(null);
  readonly unread = signal<ReadonlySet<string>>(new Set());
  /** Why a deleted chat is still listed: the device has not taken the delete. */
  readonly deleteReasons = signal<ReadonlyMap<string, string>>(new Map());
  readonly settings = signal<ReadonlyMap<string, SessionSettings>>(new Map());
  readonly commands = signal<ReadonlyMap<string, readonly Command[]>>(new Map());
  /** Modes seen on any session of this device, for a new session's picker. */
  readonly knownModes = computed(() => {
    for (const s of this.settings.value.values()) if (s.modes?.availableModes.length) return s.modes.availableModes;
    return [];
  });

  /** Chats this page knows of that no list from D1 had yet. */
  private readonly unlisted = new Set<string>();

  constructor(
    private readonly deviceId: string,
    private readonly socket: ClientSocket,
  ) {}

  get(sessionId: string): ChatInfo | undefined {
    return this.list.value.find((c) => c.session_id === sessionId);
  }

  /**
   * Reads the chat list again. The instance writes D1 just after it tells the sockets, so a chat this page learnt
   * of (made here, or announced) may not be listed yet: it is kept until a list has it.
   */
  async refresh(): Promise<void> {
    const listed = await fetchChats(this.deviceId);
    const ids = new Set(listed.map((c) => c.session_id));
    for (const id of ids) this.unlisted.delete(id);
    const kept = this.list.value.filter((c) => this.unlisted.has(c.session_id) && !ids.has(c.session_id));
    batch(() => {
      this.list.value = [...kept, ...listed];
      this.listed.value = true;
    });
  }

  /** Shows a chat (or none), which reads it. */
  show(sessionId: string | null): void {
    batch(() => {
      this.shown.value = sessionId;
      if (!sessionId || !this.unread.value.has(sessionId)) return;
      const unread = new Set(this.unread.value);
      unread.delete(sessionId);
      this.unread.value = unread;
    });
  }

  /** Something came for a chat: unread unless it is the one shown on a visible page. */
  markUnread(sessionId: string): void {
    if (sessionId === this.shown.value && document.visibilityState === "visible") return;
    if (this.unread.value.has(sessionId)) return;
    this.unread.value = new Set([...this.unread.value, sessionId]);
  }

  /** A terminal on the device shares its session. */
  announced(a: SessionAnnounce): void {
    const existing = this.get(a.sessionId);
    const chat: ChatInfo = {
      device_id: this.deviceId,
      session_id: a.sessionId,
      title: a.title ?? null,
      cwd: a.cwd,
      origin: "terminal",
      model: a.model ?? null,
      mode: a.mode ?? null,
      busy: a.busy,
      updated_at: Date.now(),
      pending_delete: existing?.pending_delete ?? false,
    };
    // A chat pending deletion is not brought back by an announce.
    if (existing?.pending_delete) return;
    this.unlisted.add(a.sessionId);
    batch(() => {
      this.list.value = [chat, ...this.list.value.filter((c) => c.session_id !== a.sessionId)];
      this.setSettings(a.sessionId, { model: a.model ?? null, mode: a.mode ?? null, effort: a.effort ?? null });
    });
  }

  patch(sessionId: string, patch: Partial<ChatInfo>): void {
    this.list.value = this.list.value.map((c) =>
      c.session_id === sessionId ? { ...c, ...patch, updated_at: Date.now() } : c,
    );
  }

  /** The chat was deleted. */
  forget(sessionId: string): void {
    this.unlisted.delete(sessionId);
    batch(() => {
      this.list.value = this.list.value.filter((c) => c.session_id !== sessionId);
      const reasons = new Map(this.deleteReasons.value);
      reasons.delete(sessionId);
      this.deleteReasons.value = reasons;
    });
  }

  setSettings(sessionId: string, patch: SessionSettings): void {
    const next = new Map(this.settings.value);
    next.set(sessionId, { ...next.get(sessionId), ...patch });
    this.settings.value = next;
  }

  /**
   * What the instance remembers the session runs with (`_instance/session/settings`): shown where this page knows
   * nothing newer — after a reload, in a second browser, for a chat made elsewhere.
   */
  loadSettings(sessionId: string): void {
    background(
      this.socket.request<{ settings: SessionSettingsKept | null }>("_instance/session/settings", { sessionId }).then(
        ({ settings: kept }) => {
          if (!kept) return;
          const known = this.settings.value.get(sessionId) ?? {};
          this.setSettings(sessionId, {
            ...(known.modes == null && kept.modes && { modes: kept.modes }),
            ...(known.mode == null && kept.mode !== null && { mode: kept.mode }),
            ...(known.model == null && kept.model !== null && { model: kept.model }),
            ...(known.effort == null && kept.effort !== null && { effort: kept.effort }),
          });
        },
        // An instance without it answers -32601: the device's own status is what shows.
        () => {},
      ),
    );
  }

  setCommands(sessionId: string, commands: readonly Command[] | undefined): void {
    const next = new Map(this.commands.value);
    next.set(
      sessionId,
      (commands ?? []).filter((c) => typeof c?.name === "string"),
    );
    this.commands.value = next;
  }

  /** Asks the device for a session's commands, the first time. */
  loadCommands(sessionId: string): void {
    if (this.commands.value.has(sessionId)) return;
    background(
      this.socket
        .request<CommandsResult>("_lembas/commands", { sessionId })
        // An available_commands_update that came meanwhile is newer than this answer.
        .then((res) => this.commands.value.has(sessionId) || this.setCommands(sessionId, res.commands)),
    );
  }

  /** Makes a session on the device, listed at once. */
  async create(options: NewSessionOptions): Promise<string> {
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
    batch(() => {
      this.setSettings(res.sessionId, {
        ...(res.modes && { modes: res.modes, mode: res.modes.currentModeId }),
        ...(lembas && { model: lembas.model, mode: lembas.mode ?? res.modes?.currentModeId, effort: lembas.effort }),
      });
      if (this.get(res.sessionId)) return;
      this.unlisted.add(res.sessionId);
      this.list.value = [
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
        ...this.list.value,
      ];
    });
    return res.sessionId;
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
    this.patch(sessionId, { title: res.title });
  }

  /**
   * Asks the device to delete a chat. True when it took it (what else this page keeps of the chat goes too, which
   * the caller sees to); otherwise the chat stays listed as pending, with why, until it does.
   */
  async delete(sessionId: string): Promise<boolean> {
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
    if (reason === null) return true;
    batch(() => {
      this.patch(sessionId, { pending_delete: true });
      this.deleteReasons.value = new Map(this.deleteReasons.value).set(sessionId, reason);
    });
    return false;
  }
}
