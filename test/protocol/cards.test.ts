import { describe, expect, it } from "vitest";
import {
  CARDS,
  openCard,
  validatePermissionAnswer,
  validateQuestionAnswer,
  validatePlanAnswer,
  type PermissionRequest,
  type QuestionRequest,
  type PlanRequest,
} from "../../src/protocol/cards";
import { permissionParams } from "../shared/cards";

const permission: PermissionRequest = CARDS["session/request_permission"].params.parse(
  permissionParams("call_1", { session: true, lembas: { patient: true } }),
);

const longLabel = "x".repeat(300);
const question: QuestionRequest = CARDS["_lembas/question"].params.parse({
  sessionId: "ses_1",
  toolCallId: "call_q",
  questions: [
    {
      header: "DB",
      question: "Which database?",
      multiple: false,
      options: [{ label: "SQLite", recommended: true }, { label: "Postgres" }],
    },
    {
      header: "Extras",
      question: "Which extras?",
      multiple: true,
      options: [{ label: "cache" }, { label: "queue" }, { label: longLabel }],
    },
  ],
});

const plan: PlanRequest = CARDS["_lembas/plan"].params.parse({
  sessionId: "ses_1",
  toolCallId: "call_p",
  path: "PLAN.md",
  text: "# Plan",
});

describe("permission answers", () => {
  it("accept an offered option or a cancel", () => {
    expect(
      validatePermissionAnswer(permission, { outcome: { outcome: "selected", optionId: "session" } }),
    ).toMatchObject({ ok: true });
    expect(validatePermissionAnswer(permission, { outcome: { outcome: "cancelled" } })).toMatchObject({ ok: true });
    expect(
      validatePermissionAnswer(permission, {
        outcome: { outcome: "selected", optionId: "once" },
        _meta: { lembas: { command: "rm -rf build/tmp" } },
      }),
    ).toMatchObject({ ok: true });
    expect(
      validatePermissionAnswer(permission, {
        outcome: { outcome: "selected", optionId: "deny" },
        _meta: { lembas: { feedback: "not that folder" } },
      }),
    ).toMatchObject({ ok: true });
  });

  it("refuse an optionId the card does not offer, naming the ones it does", () => {
    const r = validatePermissionAnswer(permission, { outcome: { outcome: "selected", optionId: "forever" } });
    expect(r).toEqual({ ok: false, error: expect.stringContaining('"forever" is not one of this card\'s options') });
    expect(r.ok || r.error).toContain('"once", "session", "deny"');
  });

  it("refuse a bad outcome, and feedback with an allow or a command with a denial", () => {
    expect(validatePermissionAnswer(permission, { outcome: { outcome: "approved" } })).toMatchObject({
      ok: false,
      error: expect.stringContaining("outcome.outcome"),
    });
    expect(validatePermissionAnswer(permission, { outcome: "selected" })).toMatchObject({ ok: false });
    expect(
      validatePermissionAnswer(permission, {
        outcome: { outcome: "selected", optionId: "once" },
        _meta: { lembas: { feedback: "why" } },
      }),
    ).toMatchObject({ ok: false });
    expect(
      validatePermissionAnswer(permission, {
        outcome: { outcome: "selected", optionId: "deny" },
        _meta: { lembas: { command: "ls" } },
      }),
    ).toMatchObject({ ok: false });
  });
});

describe("question answers", () => {
  const answer = (answers: unknown[]) => validateQuestionAnswer(question, { outcome: "answered", answers });

  it("accept one answer per question: options among the labels, custom, back, skipped, or a dismissal", () => {
    expect(
      answer([
        { kind: "options", labels: ["SQLite"] },
        { kind: "options", labels: ["cache", "queue"] },
      ]),
    ).toMatchObject({ ok: true });
    expect(answer([{ kind: "custom", text: "DuckDB" }, { kind: "skipped" }])).toMatchObject({ ok: true });
    expect(answer([{ kind: "back", text: "what is it for?" }, { kind: "skipped" }])).toMatchObject({ ok: true });
    expect(validateQuestionAnswer(question, { outcome: "dismissed" })).toEqual({
      ok: true,
      value: { outcome: "dismissed" },
    });
  });

  it("accept a long label as the card shows it (cut at 240) or whole", () => {
    expect(answer([{ kind: "skipped" }, { kind: "options", labels: ["x".repeat(240)] }])).toMatchObject({ ok: true });
    expect(answer([{ kind: "skipped" }, { kind: "options", labels: [longLabel] }])).toMatchObject({ ok: true });
    expect(answer([{ kind: "skipped" }, { kind: "options", labels: ["x".repeat(239)] }])).toMatchObject({ ok: false });
  });

  it("refuse a label that is not among the options", () => {
    expect(answer([{ kind: "options", labels: ["MySQL"] }, { kind: "skipped" }])).toEqual({
      ok: false,
      error: 'answers.0: "MySQL" is not one of its options ("SQLite", "Postgres")',
    });
  });

  it("refuse two labels for a single-choice question", () => {
    expect(answer([{ kind: "options", labels: ["SQLite", "Postgres"] }, { kind: "skipped" }])).toEqual({
      ok: false,
      error: "answers.0: this question takes one option",
    });
  });

  it("refuse the wrong count of answers", () => {
    expect(answer([{ kind: "skipped" }])).toEqual({
      ok: false,
      error: "give one answer per question: 2 expected, 1 given",
    });
    expect(answer([{ kind: "skipped" }, { kind: "skipped" }, { kind: "skipped" }])).toMatchObject({ ok: false });
  });

  it("refuse a bad outcome or answer kind", () => {
    expect(validateQuestionAnswer(question, { outcome: "maybe" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("outcome"),
    });
    expect(answer([{ kind: "vote", labels: ["SQLite"] }, { kind: "skipped" }])).toMatchObject({
      ok: false,
      error: expect.stringContaining("answers.0.kind"),
    });
    expect(answer([{ kind: "options", labels: [] }, { kind: "skipped" }])).toMatchObject({ ok: false });
  });
});

describe("plan answers", () => {
  it("accept approve with edit or manual, revise with feedback, dismissed", () => {
    expect(validatePlanAnswer(plan, { outcome: "approve", mode: "manual" })).toMatchObject({ ok: true });
    expect(validatePlanAnswer(plan, { outcome: "revise", feedback: "split step 2" })).toMatchObject({ ok: true });
    expect(validatePlanAnswer(plan, { outcome: "dismissed" })).toMatchObject({ ok: true });
  });

  it("refuse another mode, a revise without feedback, a bad outcome", () => {
    expect(validatePlanAnswer(plan, { outcome: "approve", mode: "auto" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("mode"),
    });
    expect(validatePlanAnswer(plan, { outcome: "revise" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("feedback"),
    });
    expect(validatePlanAnswer(plan, { outcome: "accept" })).toMatchObject({ ok: false });
  });
});

describe("card requests", () => {
  it("take a question card over the spec's limits as sent (refusing it would fail the model's ask)", () => {
    const q = (n: number) => ({ question: `q${n}`, options: [{ label: "a" }] });
    const five = { sessionId: "s", toolCallId: "c", questions: [q(1), q(2), q(3), q(4), q(5)] };
    expect(openCard("_lembas/question", five)).toMatchObject({ ok: true, value: { params: five } });
    const sevenOptions = {
      sessionId: "s",
      toolCallId: "c",
      questions: [{ question: "q", options: Array.from({ length: 7 }, (_, i) => ({ label: `o${i}` })) }],
    };
    expect(openCard("_lembas/question", sevenOptions)).toMatchObject({ ok: true, value: { params: sevenOptions } });
  });

  it("key cards by session and toolCallId, tell patient ones, and answer unanswered and withdrawn ones as the spec says", () => {
    const opened = openCard("session/request_permission", permission);
    expect(opened).toMatchObject({
      ok: true,
      value: {
        key: { sessionId: "ses_1", toolCallId: "call_1" },
        patient: true,
        cancelAnswer: { outcome: { outcome: "cancelled" } },
      },
    });
    if (!opened.ok) throw new Error(opened.error);
    // No answer is a denial: the card's own reject_once, with feedback saying why.
    expect(opened.value.unansweredAnswer("it timed out")).toEqual({
      outcome: { outcome: "selected", optionId: "deny" },
      _meta: { lembas: { feedback: "it timed out" } },
    });
    expect(opened.value.validateAnswer({ outcome: { outcome: "selected", optionId: "nope" } })).toMatchObject({
      ok: false,
    });
    expect(openCard("_lembas/question", question)).toMatchObject({
      ok: true,
      value: {
        key: { sessionId: "ses_1", toolCallId: "call_q" },
        patient: false,
        cancelAnswer: { outcome: "dismissed" },
      },
    });
    expect(openCard("_lembas/plan", { ...plan, _meta: { lembas: { patient: true } } })).toMatchObject({
      ok: true,
      value: {
        key: { sessionId: "ses_1", toolCallId: "call_p" },
        patient: true,
        cancelAnswer: { outcome: "dismissed" },
      },
    });
  });

  it("refuse a permission request with no toolCallId or an unknown option kind", () => {
    expect(openCard("session/request_permission", { ...permission, toolCall: { title: "x" } })).toMatchObject({
      ok: false,
      error: expect.stringContaining("toolCall.toolCallId"),
    });
    expect(
      openCard("session/request_permission", {
        ...permission,
        options: [{ optionId: "a", name: "A", kind: "allow_forever" }],
      }),
    ).toMatchObject({ ok: false });
  });
});
