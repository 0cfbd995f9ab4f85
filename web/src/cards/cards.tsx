/**
 * The cards a device asks: an approval (session/request_permission: once / always / deny, with a corrected
 * command when allowing once and feedback when denying), a question (options, an answer of one's own, skip) and a
 * plan (approve in a mode, revise with feedback, dismiss). Every open page shows them; the first answer wins and
 * the instance takes the others down. Buttons are thumb-sized; each card is a labelled region.
 */
import { useState } from "preact/hooks";
import type { PermissionRequest, PlanAnswer, PlanRequest, QuestionRequest } from "../../../src/protocol/cards";
import type * as acp from "@agentclientprotocol/sdk";
import { locationsNode, toolContentNode } from "../chat/blocks";
import { setMarkdown } from "../chat/markdown";
import { type Card, toolCallIdOf } from "../link/cards";
import type { DeviceStore } from "../link/device-store";

/** The spec's cut of an option's label on a card. */
const LABEL_MAX = 240;

export function CardList({ store, cards }: { store: DeviceStore; cards: readonly Card[] }) {
  if (cards.length === 0) return null;
  return (
    <div class="cards">
      {cards.map((card) => (
        <CardView
          key={String(card.id)}
          card={card}
          answer={(result) => store.cards.answer(card, result)}
          inTranscript={(toolCallId) => store.turns.transcript(card.params.sessionId).toolElement(toolCallId)}
        />
      ))}
    </div>
  );
}

/** The transcript's element of a tool call, when it shows it. */
type ToolLookup = (toolCallId: string) => HTMLElement | null;

function CardView({
  card,
  answer,
  inTranscript,
}: {
  card: Card;
  answer: (result: unknown) => void;
  inTranscript: ToolLookup;
}) {
  const id = toolCallIdOf(card);
  const label = `card-${id}`;
  return (
    <section class="card-request" data-tool-call-id={id} aria-labelledby={label} data-card>
      {card.method === "session/request_permission" && (
        <Permission labelId={label} params={card.params} answer={answer} inTranscript={inTranscript} />
      )}
      {card.method === "_lembas/question" && <Question labelId={label} params={card.params} answer={answer} />}
      {card.method === "_lembas/plan" && <Plan labelId={label} params={card.params} answer={answer} />}
    </section>
  );
}

interface CardProps<P> {
  labelId: string;
  params: P;
  answer: (result: unknown) => void;
}

const OPTION_LABEL: Record<string, string> = {
  allow_once: "Allow once",
  allow_always: "Always allow",
  reject_once: "Deny",
  reject_always: "Always deny",
};

/** The command line a tool call would run, when its input has one (what a person may correct). */
function commandOf(rawInput: unknown): string | null {
  if (!rawInput || typeof rawInput !== "object") return null;
  const command = (rawInput as { command?: unknown }).command;
  if (typeof command === "string") return command;
  return Array.isArray(command) && command.every((c) => typeof c === "string") ? command.join(" ") : null;
}

/** DOM built outside Preact (a diff, output), placed in a Preact tree. */
function Built({ build }: { build: () => HTMLElement }) {
  return (
    <div
      class="built"
      ref={(el) => {
        if (el && !el.firstChild) el.append(build());
      }}
    />
  );
}

/** What the tool call carries: its content (diffs, text), its places, its command; else its raw input. */
function ToolCallShown({ tool, command }: { tool: PermissionRequest["toolCall"]; command: string | null }) {
  const content = (tool.content ?? []) as acp.ToolCallContent[];
  const locations = ((tool as { locations?: acp.ToolCallLocation[] | null }).locations ?? []).filter(
    (l) => typeof l?.path === "string",
  );
  const carries = content.length > 0 || locations.length > 0 || command !== null;
  return (
    <>
      {locations.length > 0 && <Built build={() => locationsNode(locations)} />}
      {content.map((c) => (
        <Built build={() => toolContentNode(c)} />
      ))}
      {!carries && tool.rawInput != null && <pre class="tool-input">{JSON.stringify(tool.rawInput, null, 2)}</pre>}
    </>
  );
}

function Permission({
  labelId,
  params,
  answer,
  inTranscript,
}: CardProps<PermissionRequest> & { inTranscript: ToolLookup }) {
  const tool = params.toolCall;
  const shown = inTranscript(tool.toolCallId);
  const lembas = (params._meta as { lembas?: { reason?: string; purpose?: string } } | undefined)?.lembas;
  const command = commandOf(tool.rawInput);
  const [edited, setEdited] = useState(command ?? "");
  const [feedback, setFeedback] = useState("");
  const choose = (optionId: string, kind: string) => {
    const meta: { command?: string; feedback?: string } = {};
    // A corrected command goes with allowing once; feedback with a denial (the spec's rule).
    if (kind === "allow_once" && command !== null && edited.trim() && edited !== command) meta.command = edited;
    if (kind.startsWith("reject") && feedback.trim()) meta.feedback = feedback.trim();
    answer({
      outcome: { outcome: "selected", optionId },
      ...(Object.keys(meta).length > 0 && { _meta: { lembas: meta } }),
    });
  };
  return (
    <>
      <h2 id={labelId}>Allow {tool.title ?? "this tool call"}?</h2>
      {tool.kind && <p class="muted">{tool.kind}</p>}
      {lembas?.reason && <p>{lembas.reason}</p>}
      {lembas?.purpose && <p class="muted">{lembas.purpose}</p>}
      {shown && (
        <p>
          <a
            href={`#${shown.id}`}
            onClick={(e) => {
              e.preventDefault();
              if (shown instanceof HTMLDetailsElement) shown.open = true;
              shown.scrollIntoView({ block: "center" });
            }}
          >
            See this tool call in the chat
          </a>
        </p>
      )}
      <ToolCallShown tool={tool} command={command} />
      {command !== null && (
        <label>
          Command (edit it to run a corrected one, once)
          <textarea class="mono" rows={2} value={edited} onInput={(e) => setEdited(e.currentTarget.value)} />
        </label>
      )}
      <label>
        Why not? (sent with a denial)
        <input value={feedback} onInput={(e) => setFeedback(e.currentTarget.value)} />
      </label>
      <div class="actions">
        {params.options.map((o) => (
          <button
            type="button"
            class={o.kind.startsWith("reject") ? "secondary" : ""}
            onClick={() => choose(o.optionId, o.kind)}
          >
            {o.name || OPTION_LABEL[o.kind] || o.kind}
          </button>
        ))}
      </div>
    </>
  );
}

type Choice = { picked: string[]; custom: string; skipped: boolean };

function Question({ labelId, params, answer }: CardProps<QuestionRequest>) {
  const [choices, setChoices] = useState<Choice[]>(() =>
    params.questions.map(() => ({ picked: [], custom: "", skipped: false })),
  );
  const set = (i: number, change: Partial<Choice>) =>
    setChoices((all) => all.map((c, j) => (j === i ? { ...c, ...change } : c)));
  const send = () =>
    answer({
      outcome: "answered",
      answers: choices.map((c) => {
        if (c.skipped) return { kind: "skipped" };
        if (c.custom.trim()) return { kind: "custom", text: c.custom.trim() };
        return c.picked.length > 0 ? { kind: "options", labels: c.picked } : { kind: "skipped" };
      }),
    });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <h2 id={labelId}>{params.questions.length === 1 ? "A question" : `${params.questions.length} questions`}</h2>
      {params.why && <p>{params.why}</p>}
      {params.questions.map((q, i) => {
        const choice = choices[i]!;
        const name = `${labelId}-q${i}`;
        return (
          <fieldset class="question" disabled={choice.skipped}>
            <legend>{q.header ? `${q.header}: ${q.question}` : q.question}</legend>
            {q.options.map((o) => {
              const value = o.label.slice(0, LABEL_MAX);
              return (
                <label class="option">
                  <input
                    type={q.multiple ? "checkbox" : "radio"}
                    name={name}
                    value={value}
                    checked={choice.picked.includes(value)}
                    onChange={(e) => {
                      const others = q.multiple ? choice.picked.filter((p) => p !== value) : [];
                      set(i, { picked: e.currentTarget.checked ? [...others, value] : others, custom: "" });
                    }}
                  />
                  <span>
                    {value}
                    {o.recommended && <span class="badge">recommended</span>}
                    {o.description && <span class="muted option-description">{o.description}</span>}
                  </span>
                </label>
              );
            })}
            <label>
              Or your own answer
              <input
                value={choice.custom}
                onInput={(e) =>
                  set(i, { custom: e.currentTarget.value, picked: e.currentTarget.value ? [] : choice.picked })
                }
              />
            </label>
          </fieldset>
        );
      })}
      <div class="actions">
        <button type="submit">Answer</button>
        {params.questions.length === 1 ? (
          <button
            type="button"
            class="secondary"
            onClick={() => answer({ outcome: "answered", answers: [{ kind: "skipped" }] })}
          >
            Skip
          </button>
        ) : null}
        <button type="button" class="secondary" onClick={() => answer({ outcome: "dismissed" })}>
          Dismiss
        </button>
      </div>
    </form>
  );
}

/** The mode a plan is approved in. */
type PlanMode = Extract<PlanAnswer, { outcome: "approve" }>["mode"];

function Plan({ labelId, params, answer }: CardProps<PlanRequest>) {
  const [mode, setMode] = useState<PlanMode>("edit");
  const [feedback, setFeedback] = useState("");
  return (
    <>
      <h2 id={labelId}>Plan: {params.path}</h2>
      <div
        class="plan-text md"
        ref={(el) => {
          if (el) setMarkdown(el, params.text);
        }}
      />
      <div class="actions">
        <label class="inline">
          Then work in
          <select value={mode} onChange={(e) => setMode(e.currentTarget.value as PlanMode)}>
            <option value="edit">edit mode (changes made)</option>
            <option value="manual">manual mode (each change asked)</option>
          </select>
        </label>
        <button type="button" onClick={() => answer({ outcome: "approve", mode })}>
          Approve
        </button>
      </div>
      <label>
        What should change?
        <textarea rows={2} value={feedback} onInput={(e) => setFeedback(e.currentTarget.value)} />
      </label>
      <div class="actions">
        <button
          type="button"
          class="secondary"
          disabled={!feedback.trim()}
          onClick={() => answer({ outcome: "revise", feedback: feedback.trim() })}
        >
          Revise
        </button>
        <button type="button" class="secondary" onClick={() => answer({ outcome: "dismissed" })}>
          Dismiss
        </button>
      </div>
    </>
  );
}
