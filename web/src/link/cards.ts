/**
 * The cards waiting on this page: the device's requests a person answers (approvals, questions, plans), as the
 * instance sends them to this socket. A card goes when it is answered here, settled on another page, withdrawn, or
 * its chat deleted; all go when the socket closes, and come again when it attaches.
 */
import { signal } from "@preact/signals";
import type { CardMethod, PermissionRequest, PlanRequest, QuestionRequest } from "../../../src/protocol/cards";
import type { CardDecision } from "../../../src/protocol/instance";
import type { ClientSocket, IncomingRequest } from "./client-socket";

export type Card =
  | { id: string | number; method: "session/request_permission"; params: PermissionRequest }
  | { id: string | number; method: "_lembas/question"; params: QuestionRequest }
  | { id: string | number; method: "_lembas/plan"; params: PlanRequest };
/** The requests shown as cards: a record, so that a card method the API adds fails the build until it is here. */
const CARD_METHODS: Readonly<Record<CardMethod, true>> = {
  "session/request_permission": true,
  "_lembas/question": true,
  "_lembas/plan": true,
};

export const toolCallIdOf = (card: Card): string =>
  card.method === "session/request_permission" ? card.params.toolCall.toolCallId : card.params.toolCallId;

export class Cards {
  readonly waiting = signal<Card[]>([]);
  /** The cards this page answered (`<session>/<toolCall>`), so their decision says "answered here". */
  private readonly answeredHere = new Set<string>();

  constructor(private readonly socket: ClientSocket) {}

  of(sessionId: string): Card[] {
    return this.waiting.value.filter((c) => c.params.sessionId === sessionId);
  }

  /** A request the instance makes of this page: a card (one sent again replaces its first), anything else refused. */
  requested(request: IncomingRequest): Card | null {
    if (!Object.hasOwn(CARD_METHODS, request.method)) {
      this.socket.refuse(request.id, request.method);
      return null;
    }
    const card = { id: request.id, method: request.method, params: request.params } as Card;
    this.waiting.value = [...this.waiting.value.filter((c) => c.id !== card.id), card];
    return card;
  }

  answer(card: Card, result: unknown): void {
    this.socket.respond(card.id, result);
    this.answeredHere.add(`${card.params.sessionId}/${toolCallIdOf(card)}`);
    this.drop((c) => c.id === card.id);
  }

  /** Whether this page gave the answer a card's decision (`_instance/card/decided`) tells of. */
  answeredByThisPage(decision: CardDecision): boolean {
    return this.answeredHere.delete(`${decision.sessionId}/${decision.toolCallId}`);
  }

  /** Answered on another page (`_lembas/permission/settled`). */
  settled(sessionId: unknown, toolCallId: unknown): void {
    this.drop((c) => c.params.sessionId === sessionId && toolCallIdOf(c) === toolCallId);
  }

  /** The instance withdrew its request (`$/cancel_request`: a card that ended). */
  withdrawn(requestId: unknown): void {
    this.drop((c) => c.id === requestId);
  }

  /** The chat was deleted. */
  forget(sessionId: string): void {
    this.drop((c) => c.params.sessionId === sessionId);
  }

  /** The socket closed: the cards come again when it attaches, and could not be answered meanwhile. */
  clear(): void {
    this.waiting.value = [];
  }

  private drop(which: (card: Card) => boolean): void {
    this.waiting.value = this.waiting.value.filter((c) => !which(c));
  }
}
