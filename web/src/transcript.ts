/** A session's live transcript, built from session/update notifications as ACP defines them. */
import { h } from "./dom.js";
import type { Params } from "./client-socket.js";

type Update = {
  sessionUpdate?: string;
  content?: { type?: string; text?: string };
  toolCallId?: string;
  title?: string;
  status?: string;
  kind?: string;
  entries?: { content?: string; status?: string }[];
};

/** How each streamed kind of text is styled; anything else is the agent's. */
const MESSAGE_CLASS: Record<string, string> = { agent_thought_chunk: "thought", user_message_chunk: "user" };

export class Transcript {
  readonly el = h("div", { class: "transcript", "aria-live": "polite" });
  private current: HTMLElement | null = null;
  private currentKind = "";
  private readonly tools = new Map<string, HTMLElement>();

  userMessage(text: string): void {
    this.el.append(h("div", { class: "msg user" }, text));
    this.current = null;
    this.scroll();
  }

  note(text: string, cls = "note"): void {
    this.el.append(h("div", { class: `msg ${cls}` }, text));
    this.current = null;
    this.scroll();
  }

  apply(params: Params): void {
    const update = params.update as Update | undefined;
    if (!update) return;
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
      case "agent_thought_chunk":
      case "user_message_chunk":
        this.appendText(update.sessionUpdate, update.content?.text ?? "");
        break;
      case "tool_call":
        this.tool(update, true);
        break;
      case "tool_call_update":
        this.tool(update, false);
        break;
      case "plan":
        this.el.append(
          h(
            "ul",
            { class: "msg plan" },
            ...(update.entries ?? []).map((e) => h("li", { class: e.status ?? "" }, e.content ?? "")),
          ),
        );
        this.current = null;
        break;
    }
    this.scroll();
  }

  private appendText(kind: string, text: string): void {
    if (!this.current || this.currentKind !== kind) {
      const cls = MESSAGE_CLASS[kind] ?? "agent";
      this.current = h("div", { class: `msg ${cls}` });
      this.currentKind = kind;
      this.el.append(this.current);
    }
    this.current.textContent += text;
  }

  private tool(update: Update, created: boolean): void {
    const id = update.toolCallId ?? "";
    let el = this.tools.get(id);
    if (!el && (created || id)) {
      el = h(
        "div",
        { class: "msg tool", "data-tool-call-id": id },
        h("span", { class: "tool-title" }),
        " ",
        h("span", { class: "tool-status" }),
      );
      this.tools.set(id, el);
      this.el.append(el);
      this.current = null;
    }
    if (!el) return;
    if (update.title) el.querySelector(".tool-title")!.textContent = update.title;
    if (update.status) el.querySelector(".tool-status")!.textContent = update.status;
  }

  private scroll(): void {
    this.el.scrollTop = this.el.scrollHeight;
  }
}
