/**
 * A card's decision (`_instance/card/decided`, protocol/instance.ts): what was asked and what the device was answered,
 * each in a short line, and who answered. Built from the card's params and the answer as the device got it, so a
 * transcript (and a turn's record) can keep one line per card without keeping the card.
 */
import {
  PermissionAnswer,
  PermissionRequest,
  PlanAnswer,
  PlanRequest,
  QuestionAnswer,
  QuestionRequest,
  type CardMethod,
} from "../../../protocol/cards";
import type { CardDecisionAnswer, CardEnd, CardKind } from "../../../protocol/instance";

/** The longest line a decision says what was asked or answered in. */
export const DECISION_LINE_MAX = 240;

/** Cut to DECISION_LINE_MAX at a word, with an ellipsis when cut; one line. */
export function line(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= DECISION_LINE_MAX) return flat;
  const cut = flat.slice(0, DECISION_LINE_MAX - 1);
  const space = cut.lastIndexOf(" ");
  return `${space > DECISION_LINE_MAX / 2 ? cut.slice(0, space) : cut}…`;
}

export const KIND_OF: Record<CardMethod, CardKind> = {
  "session/request_permission": "permission",
  "_lembas/question": "question",
  "_lembas/plan": "plan",
};

/** Who ended a card nobody answered, in words. */
export const ENDED_BY: Record<Exclude<CardEnd, "answered">, string> = {
  timed_out: "timed out",
  settled: "settled on the device",
  withdrawn: "withdrawn",
  link_down: "link dropped",
  refused: "no client could show it",
};

/** What a card asks, in a line. */
export function askedOf(method: CardMethod, params: unknown): string {
  if (method === "session/request_permission") {
    const p = PermissionRequest.safeParse(params);
    const call = p.success ? p.data.toolCall : null;
    return line(call?.title || call?.kind || "a tool call");
  }
  if (method === "_lembas/question") {
    const p = QuestionRequest.safeParse(params);
    if (!p.success) return "a question";
    const [first, ...more] = p.data.questions;
    const text = first?.question || first?.header || "a question";
    return line(more.length > 0 ? `${text} (and ${more.length} more)` : text);
  }
  const p = PlanRequest.safeParse(params);
  return line(p.success ? `the plan in ${p.data.path}` : "a plan");
}

function permissionAnswer(params: unknown, answer: PermissionAnswer): CardDecisionAnswer {
  const { outcome, _meta } = answer;
  if (outcome.outcome !== "selected") return { outcome: "cancelled", text: "cancelled" };
  const p = PermissionRequest.safeParse(params);
  const option = p.success ? p.data.options.find((o) => o.optionId === outcome.optionId) : undefined;
  const name = option?.name || outcome.optionId;
  const said = _meta?.lembas?.command ? `as ${_meta.lembas.command}` : _meta?.lembas?.feedback;
  const extra = said ? ` — ${said}` : "";
  return { outcome: "selected", optionId: outcome.optionId, text: line(name + extra) };
}

function questionAnswer(answer: QuestionAnswer): CardDecisionAnswer {
  if (answer.outcome === "dismissed") return { outcome: "dismissed", text: "dismissed" };
  const each = answer.answers.map((a) => {
    if (a.kind === "options") return a.labels.join(", ");
    if (a.kind === "skipped") return "skipped";
    return a.text;
  });
  return { outcome: "answered", text: line(each.join("; ")) };
}

function planAnswer(answer: PlanAnswer): CardDecisionAnswer {
  if (answer.outcome === "approve") return { outcome: "approve", text: `approved, then work in ${answer.mode} mode` };
  if (answer.outcome === "revise") return { outcome: "revise", text: line(`revise: ${answer.feedback}`) };
  return { outcome: "dismissed", text: "dismissed" };
}

/** The answer the device got, in short; null when it is not one the card takes (nothing to say of it). */
export function answerOf(method: CardMethod, params: unknown, answer: unknown): CardDecisionAnswer | null {
  if (method === "session/request_permission") {
    const a = PermissionAnswer.safeParse(answer);
    return a.success ? permissionAnswer(params, a.data) : null;
  }
  if (method === "_lembas/question") {
    const a = QuestionAnswer.safeParse(answer);
    return a.success ? questionAnswer(a.data) : null;
  }
  const a = PlanAnswer.safeParse(answer);
  return a.success ? planAnswer(a.data) : null;
}
