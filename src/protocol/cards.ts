/**
 * Cards: the device's requests a person answers — approvals (session/request_permission), questions
 * (_lembas/question) and plans (_lembas/plan) — and the answers a browser may give. An answer is checked against
 * its card (the option chosen is one offered, one answer per question, …) so a bad one gets a sentence back and the
 * card stays open. A card is taken as the device sent it: what the spec says a device sends (at most 4 questions of
 * at most 6 options, a permission's reason) is not held against it — refusing the card would fail the model's ask.
 */
import * as z from "zod/mini";
import { taggedUnion } from "./open-union";
import { SessionId } from "./acp";
import { cutToFit } from "./cut";
import { check, type Checked } from "./issues";
import { isRecord } from "./jsonrpc";

const ToolCallId = z.string().check(z.minLength(1, "a toolCallId is required"));
const Patient = z.optional(z.looseObject({ lembas: z.optional(z.looseObject({ patient: z.optional(z.boolean()) })) }));
type PatientMeta = z.infer<typeof Patient> | null;
const isPatient = (meta: PatientMeta) => meta?.lembas?.patient === true;

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = <T>(error: string): Checked<T> => ({ ok: false, error });
const quote = (items: readonly string[]) => items.map((item) => JSON.stringify(item)).join(", ");

// ---- session/request_permission ----

export const PERMISSION_OPTION_KINDS = ["allow_once", "allow_always", "reject_once", "reject_always"] as const;

export const PermissionRequest = z.looseObject({
  sessionId: SessionId,
  toolCall: z.looseObject({
    toolCallId: ToolCallId,
    title: z.optional(z.nullable(z.string())),
    kind: z.optional(z.nullable(z.string())),
    status: z.optional(z.nullable(z.string())),
    rawInput: z.optional(z.unknown()),
    content: z.optional(z.nullable(z.array(z.unknown()))),
  }),
  options: z
    .array(
      z.looseObject({
        optionId: z.string().check(z.minLength(1)),
        name: z.string(),
        kind: z.literal(PERMISSION_OPTION_KINDS),
      }),
    )
    .check(
      z.minLength(1, "a permission request needs at least one option"),
      z.refine((options) => new Set(options.map((o) => o.optionId)).size === options.length, "option ids must differ"),
    ),
  _meta: z.optional(
    z.nullable(
      z.looseObject({
        lembas: z.optional(
          z.looseObject({
            reason: z.optional(z.string()),
            purpose: z.optional(z.string()),
            always: z.optional(z.unknown()),
            patient: z.optional(z.boolean()),
          }),
        ),
      }),
    ),
  ),
});
export type PermissionRequest = z.infer<typeof PermissionRequest>;

export const PermissionAnswer = z.looseObject({
  outcome: taggedUnion("outcome", [
    z.looseObject({ outcome: z.literal("selected"), optionId: z.string().check(z.minLength(1)) }),
    z.looseObject({ outcome: z.literal("cancelled") }),
  ]),
  _meta: z.optional(
    z.looseObject({
      lembas: z.optional(
        z
          .looseObject({
            command: z.optional(z.string().check(z.minLength(1))),
            feedback: z.optional(z.string().check(z.minLength(1))),
          })
          .check(
            z.refine(
              (l) => l.command === undefined || l.feedback === undefined,
              "send either a corrected command or feedback, not both",
            ),
          ),
      ),
    }),
  ),
});
export type PermissionAnswer = z.infer<typeof PermissionAnswer>;

/** The answer, if it chooses one of the card's own options; a corrected command goes with allowing once, feedback
 * with a denial. */
export function validatePermissionAnswer(params: PermissionRequest, answer: unknown): Checked<PermissionAnswer> {
  const checked = check(PermissionAnswer, answer);
  if (!checked.ok) return checked;
  const { outcome, _meta } = checked.value;
  const chosen =
    outcome.outcome === "selected" ? params.options.find((o) => o.optionId === outcome.optionId) : undefined;
  if (outcome.outcome === "selected" && !chosen) {
    return fail(
      `optionId ${JSON.stringify(outcome.optionId)} is not one of this card's options (${quote(params.options.map((o) => o.optionId))})`,
    );
  }
  if (_meta?.lembas?.command !== undefined && chosen?.kind !== "allow_once") {
    return fail("a corrected command can only go with an option that allows once");
  }
  if (_meta?.lembas?.feedback !== undefined && chosen?.kind.startsWith("allow")) {
    return fail("feedback goes with a denial or a cancel, not with allowing");
  }
  return checked;
}

/**
 * No answer is a denial (spec: session/request_permission): the card's own deny option (reject_once) with feedback
 * saying why. ACP's `cancelled` would tell the agent the turn was cancelled. A card that offers no reject_once (never
 * chose reject_always for the person) is answered cancelled.
 */
function denial(params: PermissionRequest, why: string): PermissionAnswer {
  const deny = params.options.find((o) => o.kind === "reject_once");
  if (!deny) return { outcome: { outcome: "cancelled" } };
  return { outcome: { outcome: "selected", optionId: deny.optionId }, _meta: { lembas: { feedback: why } } };
}

// ---- _lembas/question ----

/**
 * A client shows an option's label cut to this (spec: LLeMbas shows no more); an answer may give the cut label or the
 * whole one, and the device always gets the whole one.
 */
export const QUESTION_LABEL_MAX = 240;
export const cardLabel = (label: string) => label.slice(0, QUESTION_LABEL_MAX);

export const QuestionRequest = z.looseObject({
  sessionId: SessionId,
  toolCallId: ToolCallId,
  why: z.optional(z.string()),
  questions: z
    .array(
      z.looseObject({
        header: z.optional(z.string()),
        question: z.string(),
        multiple: z.optional(z.boolean()),
        options: z.array(
          z.looseObject({
            label: z.string().check(z.minLength(1)),
            description: z.optional(z.string()),
            recommended: z.optional(z.boolean()),
          }),
        ),
      }),
    )
    .check(z.minLength(1, "ask at least one question")),
  _meta: Patient,
});
export type QuestionRequest = z.infer<typeof QuestionRequest>;

export const QuestionAnswerItem = taggedUnion("kind", [
  z.looseObject({
    kind: z.literal("options"),
    labels: z.array(z.string()).check(z.minLength(1, "choose at least one option, or skip the question")),
  }),
  z.looseObject({ kind: z.literal("custom"), text: z.string().check(z.minLength(1)) }),
  z.looseObject({ kind: z.literal("back"), text: z.string().check(z.minLength(1)) }),
  z.looseObject({ kind: z.literal("skipped") }),
]);
export type QuestionAnswerItem = z.infer<typeof QuestionAnswerItem>;

export const QuestionAnswer = taggedUnion("outcome", [
  z.looseObject({ outcome: z.literal("answered"), answers: z.array(QuestionAnswerItem) }),
  z.looseObject({ outcome: z.literal("dismissed") }),
]);
export type QuestionAnswer = z.infer<typeof QuestionAnswer>;

type Question = QuestionRequest["questions"][number];

/** The whole label an answer's label names — itself, or the option whose label it is cut from — or null. */
const wholeLabel = (offered: readonly string[], label: string): string | null =>
  offered.find((o) => o === label) ?? offered.find((o) => cardLabel(o) === label) ?? null;

/** One answer as the device is to get it (whole labels), or why it does not fit its question. */
function fitAnswer(question: Question, answer: QuestionAnswerItem): Checked<QuestionAnswerItem> {
  if (answer.kind !== "options") return ok(answer);
  if (!question.multiple && answer.labels.length > 1) return fail("this question takes one option");
  const offered = question.options.map((o) => o.label);
  const labels: string[] = [];
  for (const label of answer.labels) {
    const whole = wholeLabel(offered, label);
    if (whole === null)
      return fail(`${JSON.stringify(label)} is not one of its options (${quote(offered.map(cardLabel))})`);
    labels.push(whole);
  }
  if (new Set(labels).size !== labels.length) return fail("an option is chosen twice");
  return ok({ ...answer, labels });
}

export function validateQuestionAnswer(params: QuestionRequest, answer: unknown): Checked<QuestionAnswer> {
  const checked = check(QuestionAnswer, answer);
  if (!checked.ok || checked.value.outcome === "dismissed") return checked;
  const { answers } = checked.value;
  if (answers.length !== params.questions.length) {
    return fail(`give one answer per question: ${params.questions.length} expected, ${answers.length} given`);
  }
  const fitted: QuestionAnswerItem[] = [];
  for (const [i, question] of params.questions.entries()) {
    const fit = fitAnswer(question, answers[i]!);
    if (!fit.ok) return fail(`answers.${i}: ${fit.error}`);
    fitted.push(fit.value);
  }
  return ok({ ...checked.value, answers: fitted });
}

// ---- _lembas/plan ----

export const PlanRequest = z.looseObject({
  sessionId: SessionId,
  toolCallId: ToolCallId,
  path: z.string(),
  text: z.string(),
  _meta: Patient,
});
export type PlanRequest = z.infer<typeof PlanRequest>;

export const PlanAnswer = taggedUnion("outcome", [
  z.looseObject({ outcome: z.literal("approve"), mode: z.literal(["edit", "manual"]) }),
  z.looseObject({ outcome: z.literal("revise"), feedback: z.string().check(z.minLength(1, "say what to revise")) }),
  z.looseObject({ outcome: z.literal("dismissed") }),
]);
export type PlanAnswer = z.infer<typeof PlanAnswer>;

export const validatePlanAnswer = (_params: PlanRequest, answer: unknown): Checked<PlanAnswer> =>
  check(PlanAnswer, answer);

// ---- what clients are shown ----

/** A card is shown to clients within this (its params as JSON); a larger one has its longest strings cut. */
export const CARD_SHOWN_MAX_BYTES = 1024 * 1024;
/** Strings an answer names or a card is keyed by: never cut. */
const NAMED = new Set(["sessionId", "toolCallId", "optionId", "kind", "label", "name", "outcome", "status"]);

/** What `params._meta.instance.cut` says of a card shown cut: its longer strings were cut to `chars` UTF-16 units. */
export interface CardCut {
  chars: number;
  strings: number;
}

/**
 * A card's params as clients are shown them, within `maxBytes`: as the device sent them, or with their longest
 * strings cut (cut.ts) and `_meta.instance.cut` saying so. The device still gets its answer checked against the whole.
 */
export function shownCard(params: unknown, maxBytes: number): { params: unknown; cut: CardCut | null } {
  // Room kept for the note itself.
  const cut = cutToFit(params, maxBytes - 128, NAMED);
  if (cut.cutTo === null || !isRecord(cut.value)) return { params: cut.value, cut: null };
  const note: CardCut = { chars: cut.cutTo, strings: cut.strings };
  const meta = isRecord(cut.value._meta) ? cut.value._meta : {};
  const instance = isRecord(meta.instance) ? meta.instance : {};
  return { params: { ...cut.value, _meta: { ...meta, instance: { ...instance, cut: note } } }, cut: note };
}

// ---- the table ----

/** A card's key: ACP's toolCallId is unique within its session only. */
export interface CardKey {
  sessionId: string;
  toolCallId: string;
}

/** What the instance needs to hold a card of one kind. */
export interface CardKind<P, A> {
  params: z.ZodMiniType<P>;
  /** The answer as the device is to get it (a question's cut labels made whole), or why it does not fit. */
  // Method syntax on purpose: a table of kinds is then usable as CardKind<unknown, unknown> (see openCard).
  validateAnswer(params: P, answer: unknown): Checked<A>;
  /**
   * Sent to the device when nobody answers a card that is not patient (its time ran out, or no client attached can
   * show it): `why` says which. The spec makes no answer a denial for an approval, and dismissed for the others.
   */
  unansweredAnswer(params: P, why: string): A;
  /** Sent when the card is withdrawn (its turn cancelled, the device took it back): what ACP asks of a client. */
  cancelAnswer: A;
  /** Cards are keyed by (sessionId, toolCallId): several may be open at once, in one session or several. */
  key(params: P): CardKey;
  /** A person may also answer at the terminal: the instance does not time the card out. */
  patient(params: P): boolean;
}

/** Questions and plans alike: keyed by their own toolCallId, answered dismissed when nobody answers or they go. */
const lembasCard = {
  unansweredAnswer: () => ({ outcome: "dismissed" }) as const,
  cancelAnswer: { outcome: "dismissed" },
  key: (p: { sessionId: string; toolCallId: string }) => ({ sessionId: p.sessionId, toolCallId: p.toolCallId }),
  patient: (p: { _meta?: PatientMeta }) => isPatient(p._meta),
} as const;

export const CARDS = {
  "session/request_permission": {
    params: PermissionRequest,
    validateAnswer: validatePermissionAnswer,
    unansweredAnswer: denial,
    cancelAnswer: { outcome: { outcome: "cancelled" } },
    key: (p) => ({ sessionId: p.sessionId, toolCallId: p.toolCall.toolCallId }),
    patient: (p) => isPatient(p._meta),
  } satisfies CardKind<PermissionRequest, PermissionAnswer>,
  "_lembas/question": {
    params: QuestionRequest,
    validateAnswer: validateQuestionAnswer,
    ...lembasCard,
  } satisfies CardKind<QuestionRequest, QuestionAnswer>,
  "_lembas/plan": { params: PlanRequest, validateAnswer: validatePlanAnswer, ...lembasCard } satisfies CardKind<
    PlanRequest,
    PlanAnswer
  >,
} as const;

export type CardMethod = keyof typeof CARDS;

export const isCardMethod = (method: string): method is CardMethod => Object.hasOwn(CARDS, method);

/**
 * Whether an answer is the acknowledgement a client gives a card the instance withdrew (ACP asks `cancelled` of a
 * permission's client; a question or plan is dismissed): taken without a word once the card has ended.
 */
export function isCancelAnswer(method: CardMethod, answer: unknown): boolean {
  const outcome = (answer as { outcome?: unknown } | null)?.outcome;
  if (method === "session/request_permission")
    return (outcome as { outcome?: unknown } | null)?.outcome === "cancelled";
  return outcome === "dismissed";
}

/** A card whose params were checked, with its kind's rules bound to them. */
export interface OpenCard {
  method: CardMethod;
  key: CardKey;
  patient: boolean;
  params: unknown;
  cancelAnswer: unknown;
  unansweredAnswer(why: string): unknown;
  validateAnswer(answer: unknown): Checked<unknown>;
}

/** Checks a card request's params (a -32602 to the device when they are bad) and binds its kind's rules. */
export function openCard(method: CardMethod, rawParams: unknown): Checked<OpenCard> {
  const kind: CardKind<unknown, unknown> = CARDS[method];
  const parsed = check(kind.params, rawParams);
  if (!parsed.ok) return parsed;
  const params = parsed.value;
  return ok({
    method,
    key: kind.key(params),
    patient: kind.patient(params),
    params,
    cancelAnswer: kind.cancelAnswer,
    unansweredAnswer: (why) => kind.unansweredAnswer(params, why),
    validateAnswer: (answer) => kind.validateAnswer(params, answer),
  });
}
