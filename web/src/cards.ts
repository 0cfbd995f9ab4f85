/**
 * Cards: an approval (session/request_permission), a question (_lembas/question) or a plan (_lembas/plan) the
 * device asks. Every open tab shows them; the first answer wins and the instance takes the others down.
 */
import { h } from "./dom.js";
import type { IncomingRequest, Params } from "./client-socket.js";

type Json = Params[string];
type Answer = (result: Json) => void;

interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}
interface QuestionOption {
  label: string;
  description?: string;
  recommended?: boolean;
}
interface Question {
  header?: string;
  question: string;
  multiple?: boolean;
  options: QuestionOption[];
}

export function toolCallIdOf(params: Params): string {
  const toolCall = params.toolCall as { toolCallId?: string } | undefined;
  return String(toolCall?.toolCallId ?? params.toolCallId ?? "");
}

export function renderCard(request: IncomingRequest, answer: Answer): HTMLElement | null {
  const p = request.params;
  const key = toolCallIdOf(p);
  const card = (title: string, ...body: (Node | string | null)[]) =>
    h("section", { class: "card-request", "data-tool-call-id": key }, h("h3", {}, title), ...body);
  switch (request.method) {
    case "session/request_permission": {
      const toolCall = p.toolCall as { title?: string; rawInput?: Json } | undefined;
      const options = (p.options ?? []) as unknown as PermissionOption[];
      return card(
        "Approve?",
        h("p", {}, toolCall?.title ?? "a tool call"),
        h(
          "div",
          { class: "actions" },
          ...options.map((o) =>
            h(
              "button",
              {
                class: o.kind.startsWith("reject") ? "secondary" : "",
                onclick: () => answer({ outcome: { outcome: "selected", optionId: o.optionId } }),
              },
              o.name,
            ),
          ),
        ),
      );
    }
    case "_lembas/question": {
      const questions = (p.questions ?? []) as unknown as Question[];
      const form = h("form", {});
      questions.forEach((q, i) => {
        form.append(
          h(
            "fieldset",
            {},
            h("legend", {}, q.header ? `${q.header}: ${q.question}` : q.question),
            ...q.options.map((o) =>
              h(
                "label",
                {},
                h("input", { type: q.multiple ? "checkbox" : "radio", name: `q${i}`, value: o.label.slice(0, 240) }),
                ` ${o.label.slice(0, 240)}`,
              ),
            ),
          ),
        );
      });
      const send = () => {
        const answers = questions.map((_, i): Json => {
          const labels = [...form.querySelectorAll<HTMLInputElement>(`input[name="q${i}"]:checked`)].map(
            (x) => x.value,
          );
          return labels.length ? { kind: "options", labels } : { kind: "skipped" };
        });
        answer({ outcome: "answered", answers });
      };
      return card(
        "Question",
        typeof p.why === "string" ? h("p", {}, p.why) : null,
        form,
        h(
          "div",
          { class: "actions" },
          h("button", { onclick: send }, "Answer"),
          h("button", { class: "secondary", onclick: () => answer({ outcome: "dismissed" }) }, "Dismiss"),
        ),
      );
    }
    case "_lembas/plan": {
      const feedback = h("textarea", { placeholder: "What should change?" });
      return card(
        "Plan",
        h("p", {}, String(p.path ?? "")),
        h("pre", {}, String(p.text ?? "")),
        feedback,
        h(
          "div",
          { class: "actions" },
          h("button", { onclick: () => answer({ outcome: "approve", mode: "edit" }) }, "Approve (edit)"),
          h("button", { onclick: () => answer({ outcome: "approve", mode: "manual" }) }, "Approve (manual)"),
          h(
            "button",
            { class: "secondary", onclick: () => answer({ outcome: "revise", feedback: feedback.value }) },
            "Revise",
          ),
          h("button", { class: "secondary", onclick: () => answer({ outcome: "dismissed" }) }, "Dismiss"),
        ),
      );
    }
    default:
      return null;
  }
}
