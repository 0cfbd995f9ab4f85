/**
 * The chats' turns as the instance kept them (`_instance/kept/turns`, `_instance/kept/chats`): the transcript of a
 * chat opens from them at once, linked device or not, a page at a time; the chat list shows each chat's last message
 * and when it was; the Changes view and the export read them all.
 */
import { signal } from "@preact/signals";
import type { KeptChatsResult, KeptTurn, KeptTurnsResult } from "../../../src/protocol/instance";
import type { Transcript } from "../chat/transcript";
import type { ClientSocket } from "./client-socket";

export type KeptSummary = KeptChatsResult["chats"][number];

export class Kept {
  /** Each chat's last message and time, by session. */
  readonly summaries = signal<ReadonlyMap<string, KeptSummary>>(new Map());
  /** Where each chat's next (older) page starts; null when there is none; absent before the first page. */
  readonly next = signal<ReadonlyMap<string, number | null>>(new Map());

  constructor(private readonly socket: ClientSocket) {}

  async refresh(): Promise<void> {
    const { chats } = await this.socket.request<KeptChatsResult>("_instance/kept/chats");
    this.summaries.value = new Map(chats.map((c) => [c.sessionId, c]));
  }

  /** The chat's next page (its newest the first time) into its transcript. */
  async loadPage(sessionId: string, transcript: Transcript): Promise<void> {
    const before = this.next.value.get(sessionId);
    if (before === null) return;
    const page = await this.page(sessionId, before);
    transcript.importKept(page.turns);
    this.next.value = new Map(this.next.value).set(sessionId, page.next);
  }

  /** Every turn kept of the chat, oldest first. */
  async all(sessionId: string): Promise<KeptTurn[]> {
    const turns: KeptTurn[] = [];
    let before: number | undefined;
    for (;;) {
      const page = await this.page(sessionId, before);
      turns.push(...page.turns);
      if (page.next === null) return turns.reverse();
      before = page.next;
    }
  }

  /** The chat is shown from elsewhere (a plain agent's replay): no more of its pages are offered. */
  hide(sessionId: string): void {
    this.next.value = new Map(this.next.value).set(sessionId, null);
  }

  forget(sessionId: string): void {
    const summaries = new Map(this.summaries.value);
    summaries.delete(sessionId);
    this.summaries.value = summaries;
    const next = new Map(this.next.value);
    next.delete(sessionId);
    this.next.value = next;
  }

  private page(sessionId: string, before: number | undefined): Promise<KeptTurnsResult> {
    return this.socket.request<KeptTurnsResult>("_instance/kept/turns", {
      sessionId,
      ...(before === undefined ? {} : { before }),
    });
  }
}
