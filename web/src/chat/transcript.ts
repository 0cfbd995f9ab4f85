/**
 * A chat's transcript, built as DOM from what the device sends and updated in place: streamed agent text as
 * Markdown, thoughts folded, tool calls expandable with their content (diffs, output, locations), the plan as a
 * checklist, the engine events a person needs (prompt, steer, mode, model, compaction) and each turn's end.
 *
 * It is grouped by turn: a turn is a section keyed by its turnId (the client's, or one the device made), so the
 * same message never shows twice — a prompt shown when sent is the one its `prompt` event names, and history
 * imported on opening a chat skips turns already shown live. History goes before everything live.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { PromptResult } from "../../../src/protocol/acp";
import type { KeptAttachment, KeptItem, KeptTurn } from "../../../src/protocol/instance";
import type { AttachmentInfo, HistoryTurn, KnownEvent } from "../../../src/protocol/lembas";
import type { CardDecision } from "../../../src/protocol/instance";
import { element } from "../dom";
import { blockNode, locationsNode, outputNode, toolContentNode } from "./blocks";
import { type MarkdownRenderer, markdownRenderer, setMarkdown, whenMarkdownRenderer } from "./markdown";
import { insertTurn, nextTurn, removeTurn } from "./turn-groups";

const STOP_TEXT: Record<string, string> = {
  end_turn: "Done",
  cancelled: "Cancelled",
  max_tokens: "Stopped: the model reached its output limit",
  max_turn_requests: "Stopped: too many model requests in one turn",
  refusal: "The agent refused",
};

const PLAN_MARK: Record<string, string> = { completed: "✓", in_progress: "▸", pending: "○" };

/**
 * How long a streamed text waits after a chunk before it is drawn, with what came meanwhile: on a throttled phone a
 * frame that changes the page costs more than a frame's time, and drawn every frame, no frame came on time.
 */
const DRAW_EVERY_MS = 50;

/**
 * A block of streamed text, rendered as Markdown at most once every DRAW_EVERY_MS however fast chunks come. Only its
 * open end is rendered again: the text up to its last blank line outside a code fence is rendered once, its blocks
 * put straight in the element, so a long answer costs a frame no more than its last paragraph does. When the turn
 * ends the whole text is rendered: if that is the blocks drawn and the open end, only the open end is drawn again
 * (a layout of the open end alone, and a selection in the blocks stays); if not (a list or a link reference spanning
 * a blank line), the whole is drawn in their place. Until the renderer has come it shows the text as it is.
 */
class TextBlock {
  text = "";
  private scheduled = false;
  /** The turn ended: the text is rendered whole, and a frame still scheduled renders nothing. */
  private settled = false;
  /** How much of the text is drawn as finished blocks, and their HTML. */
  private doneUpTo = 0;
  private doneHtml = "";
  /** The nodes the open end is drawn as, after the finished blocks, and their HTML (null: drawn as plain text). */
  private open: ChildNode[] = [];
  private openHtml: string | null = "";
  constructor(
    readonly el: HTMLElement,
    private readonly body: HTMLElement = el,
  ) {}
  append(chunk: string): void {
    this.text += chunk;
    this.settled = false;
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(
      () =>
        requestAnimationFrame(() => {
          this.scheduled = false;
          if (!this.settled) this.draw();
        }),
      DRAW_EVERY_MS,
    );
  }
  /** Renders now (history, tests of the final text). */
  set(text: string): void {
    this.text = text;
    this.settle();
  }
  /** Renders the whole text (the turn ended). */
  settle(): void {
    this.settled = true;
    this.draw();
  }
  private draw(): void {
    const m = markdownRenderer();
    if (!m) {
      this.restart();
      this.body.textContent = this.text;
      this.open = [...this.body.childNodes];
      this.openHtml = null;
      whenMarkdownRenderer(this, () => this.draw());
      return;
    }
    if (this.settled) {
      const whole = m.renderMarkdown(this.text);
      const open = m.renderMarkdown(this.text.slice(this.doneUpTo));
      if (whole === this.doneHtml + open) this.drawOpen(m, open);
      else {
        this.restart();
        this.drawOpen(m, whole);
      }
      return;
    }
    const boundary = closedUpTo(this.text, this.doneUpTo);
    if (boundary > this.doneUpTo) {
      const html = m.renderMarkdown(this.text.slice(this.doneUpTo, boundary));
      // The finished blocks take the open end's place, and a new open end follows them.
      this.drawOpen(m, html);
      this.open = [];
      this.openHtml = "";
      this.doneHtml += html;
      this.doneUpTo = boundary;
    }
    this.drawOpen(m, m.renderMarkdown(this.text.slice(this.doneUpTo)));
  }
  /** Nothing drawn: the whole text is the open end. */
  private restart(): void {
    this.body.replaceChildren();
    this.open = [];
    this.openHtml = "";
    this.doneUpTo = 0;
    this.doneHtml = "";
  }
  /** Draws the open end as `html`; drawn as that already, its nodes stay (and a selection in them). */
  private drawOpen(m: MarkdownRenderer, html: string): void {
    if (html === this.openHtml) return;
    for (const node of this.open) node.remove();
    const nodes = m.markdownNodes(html);
    this.open = [...nodes.childNodes];
    this.openHtml = html;
    this.body.append(nodes);
  }
}

/**
 * The end of the text's last blank line outside a code fence, from `from` (closed already) on: what comes before it
 * is closed Markdown blocks.
 */
function closedUpTo(text: string, from: number): number {
  let closed = from;
  let inFence = false;
  let at = from;
  // What is before `from` is closed already, so `from` is outside a fence: only the text after it is read.
  for (const line of text.slice(from).split("\n")) {
    const end = at + line.length + 1;
    if (/^ {0,3}(```|~~~)/.test(line)) inFence = !inFence;
    else if (!inFence && line.trim() === "" && end <= text.length) closed = end;
    at = end;
  }
  return closed;
}

class ToolView {
  readonly el: HTMLDetailsElement;
  private readonly kind = element("span", { class: "tool-kind" });
  private readonly title = element("span", { class: "tool-title" });
  private readonly status = element("span", { class: "tool-status badge" });
  private locations = locationsNode([]);
  private readonly content = element("div", { class: "tool-content" });
  // It scrolls: it takes the focus, so a keyboard can scroll it.
  private readonly input = element("pre", { class: "tool-input", hidden: true, tabindex: 0 });
  private output: HTMLElement = element("div", { hidden: true });

  constructor(id: string) {
    this.el = element(
      "details",
      { class: "tool", id: toolAnchor(id), "data-tool-call-id": id },
      element("summary", {}, this.kind, " ", this.title, " ", this.status),
      element("div", { class: "tool-body" }, this.locations, this.content, this.input, this.output),
    );
  }

  apply(u: Omit<acp.ToolCallUpdate, "toolCallId">): void {
    if (u.kind) this.kind.textContent = u.kind;
    if (u.title) this.title.textContent = u.title;
    if (u.status) {
      this.status.textContent = u.status.replace("_", " ");
      this.el.dataset.status = u.status;
    }
    if (u.locations) {
      const locations = locationsNode(u.locations);
      this.locations.replaceWith(locations);
      this.locations = locations;
    }
    if (u.content) {
      this.content.replaceChildren(...u.content.map(toolContentNode));
      // An edit is what a person wants to see without a click.
      if (u.content.some((c) => c.type === "diff")) this.el.open = true;
    }
    if (u.rawInput !== undefined && u.rawInput !== null) this.setPre(this.input, u.rawInput, "Input");
    if (u.rawOutput !== undefined && u.rawOutput !== null) this.setOutput(u.rawOutput);
  }

  /** Output as a terminal shows it, however the tool gives it: a string, or `{output}` / `{stdout, stderr}`. */
  private setOutput(value: unknown): void {
    const text = outputText(value);
    const output = outputNode(text ?? JSON.stringify(value, null, 2));
    this.output.replaceWith(output);
    this.output = output;
  }

  /** A tool of a history turn: name, arguments, output. */
  fromHistory(tool: { name: string; args: unknown; output?: string; isError?: boolean }): void {
    this.apply({ title: tool.name, status: tool.isError ? "failed" : "completed" });
    this.setPre(this.input, tool.args, "Input");
    if (tool.output !== undefined) this.setOutput(tool.output);
  }

  private setPre(el: HTMLElement, value: unknown, label: string): void {
    el.hidden = false;
    el.setAttribute("aria-label", label);
    el.textContent = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }
}

/** The id of a tool call's element, so a card can link to it. */
export const toolAnchor = (toolCallId: string) => `tool-${encodeURIComponent(toolCallId)}`;

/** A tool's output as text, when it is text or an object with its text in `output`, `stdout` / `stderr`. */
function outputText(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (!value || typeof value !== "object") return null;
  const v = value as Record<string, unknown>;
  if (typeof v.output === "string") return v.output;
  const streams = [v.stdout, v.stderr].filter((t): t is string => typeof t === "string" && t !== "");
  return streams.length > 0 ? streams.join("\n") : null;
}

const DECISION_ASKED: Record<CardDecision["kind"], string> = {
  permission: "Approval",
  question: "Question",
  plan: "Plan",
};

class TurnView {
  readonly el: HTMLElement;
  private readonly items = element("div", { class: "turn-items" });
  private user: HTMLElement | null = null;
  private text: TextBlock | null = null;
  private thought: TextBlock | null = null;
  private plan: HTMLElement | null = null;
  private end: HTMLElement | null = null;
  /** Its answer never came to this page (a reload, a dropped socket): history may fill it in. */
  lost = false;
  /** Frames of it did not reach this page (their numbers skipped): history fills it in once it ends. */
  missing = false;
  /** Drawn from the device's history (text and tools only): a kept copy of it draws it again, richer. */
  fromHistory = false;
  /** Drawn from a kept copy that holds nothing of the agent's (its frames never passed the instance): history may. */
  keptEmpty = false;

  constructor(public turnId: string | null) {
    this.el = element("section", { class: "turn", ...(turnId ? { "data-turn-id": turnId } : {}) }, this.items);
  }

  /** A turn shown before its id was known (its first frames missed): history names it. */
  name(turnId: string): void {
    this.turnId = turnId;
    this.el.dataset.turnId = turnId;
  }

  get ended(): boolean {
    return this.end !== null;
  }

  setUser(text: string, attachments: readonly (AttachmentInfo | KeptAttachment)[] = []): void {
    if (this.user) return;
    this.user = element(
      "div",
      { class: "msg user" },
      element("div", { class: "user-text" }, text),
      attachments.length > 0
        ? element(
            "ul",
            { class: "chips", "aria-label": "Attachments" },
            ...attachments.map((a) =>
              element(
                "li",
                {},
                "data" in a && typeof a.data === "string"
                  ? element("img", {
                      class: "attachment-image",
                      src: `data:${a.mimeType};base64,${a.data}`,
                      alt: a.name,
                    })
                  : a.name,
              ),
            ),
          )
        : null,
    );
    this.el.prepend(this.user);
  }

  agentText(chunk: string): void {
    if (!this.text) {
      const el = element("div", { class: "msg agent md" });
      this.add(el);
      this.text = new TextBlock(el);
    }
    this.text.append(chunk);
  }

  thoughtText(chunk: string): void {
    this.thought ??= this.newThought();
    this.thought.append(chunk);
  }

  private newThought(): TextBlock {
    const body = element("div", { class: "md" });
    const el = element("details", { class: "msg thought" }, element("summary", {}, "Thinking"), body);
    this.add(el);
    return new TextBlock(el, body);
  }

  planEntries(entries: readonly acp.PlanEntry[]): void {
    const list = element(
      "ul",
      { class: "msg plan", "aria-label": "Plan" },
      ...entries.map((e) =>
        element(
          "li",
          { "data-status": e.status },
          element("span", { class: "plan-mark", "aria-hidden": "true" }, PLAN_MARK[e.status] ?? "○"),
          " ",
          e.content,
          element("span", { class: "visually-hidden" }, ` (${e.status.replace("_", " ")})`),
        ),
      ),
    );
    if (this.plan) this.plan.replaceWith(list);
    else this.add(list);
    this.plan = list;
  }

  add(node: HTMLElement): void {
    // Text after anything else (an image, a tool, a note) starts a new block, so it reads in the frames' order; the
    // block before it is finished, and drawn whole now rather than a frame later.
    this.text?.settle();
    this.thought?.settle();
    this.text = null;
    this.thought = null;
    this.items.append(node);
  }

  note(text: string, cls = "note"): HTMLElement {
    const el = element("p", { class: `msg ${cls}` }, text);
    this.add(el);
    return el;
  }

  /** An engine event a person reads (steer, mode, model, compaction); another shows nothing. */
  showEvent(e: KnownEvent): void {
    switch (e.type) {
      case "steered":
        for (const text of e.texts) this.note(text, "user steered");
        return;
      case "mode":
        this.note(`Mode: ${e.mode}`);
        return;
      case "model":
        this.note(`Model: ${e.ref}${e.effort && e.effort !== "off" ? ` · effort ${e.effort}` : ""}`);
        return;
      case "compacted": {
        const body = element("div", { class: "md" });
        setMarkdown(body, e.summary);
        this.add(element("details", { class: "msg note" }, element("summary", {}, "Conversation compacted"), body));
        return;
      }
    }
  }

  /** Draws the turn as the instance kept it: its message, everything it showed in order, how it ended. */
  fromKept(turn: KeptTurn): void {
    this.clear();
    this.user?.remove();
    this.user = null;
    if (turn.prompt) this.setUser(turn.prompt.text, turn.prompt.attachments);
    for (const item of turn.items) this.keptItem(item);
    this.finish(
      turn.stopReason ? ({ stopReason: turn.stopReason, _meta: { lembas: turn.result ?? {} } } as PromptResult) : null,
    );
    this.el.dataset.kept = "";
    this.keptEmpty = turn.items.length === 0;
    this.fromHistory = false;
    this.lost = false;
    this.missing = false;
  }

  private keptItem(item: KeptItem): void {
    switch (item.type) {
      case "text": {
        const el = element("div", { class: "msg agent md" });
        setMarkdown(el, item.text);
        this.add(el);
        return;
      }
      case "thought":
        this.newThought().set(item.text);
        return;
      case "block":
        this.add(blockElement(item.block as acp.ContentBlock));
        return;
      case "tool": {
        const view = new ToolView(item.tool.toolCallId);
        view.apply(item.tool as Omit<acp.ToolCallUpdate, "toolCallId">);
        this.add(view.el);
        return;
      }
      case "plan":
        this.planEntries(item.entries as acp.PlanEntry[]);
        return;
      case "event":
        this.showEvent(item.event as KnownEvent);
        return;
      case "mode":
        this.note(`Mode: ${item.modeId}`);
        return;
      case "card":
        this.add(element("p", { class: "msg note decision" }, decisionText(item)));
        return;
    }
  }

  /** The turn ended: its stop reason and what the device says beside it (command, summary, …); once. */
  finish(result: PromptResult | null): void {
    const lembas = result?._meta?.lembas;
    const parts = [result ? (STOP_TEXT[result.stopReason] ?? result.stopReason) : "Turn ended"];
    if (lembas?.command) parts.push(`ran /${lembas.command.replace(/^\//, "")}`);
    if (lembas?.mode) parts.push(`mode is now ${lembas.mode}`);
    const end = element(
      "p",
      { class: "msg turn-end", "data-stop-reason": result?.stopReason ?? "ended" },
      parts.join(" · "),
      lembas?.message ? element("span", { class: "turn-message" }, ` — ${lembas.message}`) : null,
    );
    if (lembas?.summary) {
      const summary = element("div", { class: "md" });
      setMarkdown(summary, lembas.summary);
      end.append(element("details", { class: "summary" }, element("summary", {}, "Summary"), summary));
    }
    if (lembas?.undone !== undefined)
      end.append(
        element(
          "span",
          { class: "turn-message" },
          lembas.undone
            ? ` — undid "${lembas.undone.prompt}" (${lembas.undone.files.join(", ") || "no files"})`
            : " — nothing to undo",
        ),
      );
    if (this.end) {
      // A task end came first; the answer says more.
      if (result) this.end.replaceWith(end);
      else return;
    } else this.items.append(end);
    this.end = end;
    this.lost = false;
    this.text?.settle();
    this.thought?.settle();
    this.text = null;
    this.thought = null;
  }

  /** Empties what the turn shows but its message, for what follows to rebuild it. */
  clear(): void {
    this.items.replaceChildren();
    this.end = null;
    this.plan = null;
    this.text = null;
    this.thought = null;
  }

  /** Fills a turn from history: the answer this page missed (how it ended, if shown, stays). */
  fill(assistant: readonly Extract<HistoryTurn, { role: "assistant" }>[]): void {
    const end = this.end;
    this.clear();
    for (const a of assistant) {
      if (a.reasoning) this.newThought().set(a.reasoning);
      for (const tool of a.tools) {
        const view = new ToolView(tool.id);
        view.fromHistory(tool);
        this.add(view.el);
      }
      if (a.text) {
        const el = element("div", { class: "msg agent md" });
        setMarkdown(el, a.text);
        this.add(el);
      }
    }
    if (end) this.items.append(end);
    this.end = end;
    this.lost = false;
    this.missing = false;
  }
}

export class Transcript {
  readonly el: HTMLElement;
  private readonly past = element("div", { class: "transcript-past" });
  private readonly live = element("div", { class: "transcript-live" });
  private readonly turns = new Map<string, TurnView>();
  private readonly tools = new Map<string, ToolView>();
  private current: TurnView | null = null;
  private readonly steers = new Map<string, HTMLElement>();
  /** The oldest turn drawn from the instance's kept turns: older pages go before it. */
  private oldestKept: HTMLElement | null = null;
  historyLoaded = false;

  constructor(label: string) {
    this.el = element("div", { class: "transcript", role: "log", "aria-label": label }, this.past, this.live);
  }

  /** The turn with this id, made (and made current) if new. */
  turn(turnId: string | null): TurnView {
    if (turnId) {
      const known = this.turns.get(turnId);
      if (known) return known;
    }
    const view = new TurnView(turnId);
    if (turnId) this.turns.set(turnId, view);
    insertTurn(this.live, view.el, null);
    this.current = view;
    return view;
  }

  knows(turnId: string): boolean {
    return this.turns.has(turnId);
  }

  /** A message the person sent (or the device says was sent): shown once per turn. */
  prompt(turnId: string | null, text: string, attachments?: readonly AttachmentInfo[]): void {
    const view = this.turn(turnId);
    view.setUser(text, attachments);
    this.current = view;
  }

  /** The turn's answer came (or its task ended): it shows how it ended. */
  finish(turnId: string | null, result: PromptResult | null): void {
    const view = turnId ? this.turns.get(turnId) : this.current;
    view?.finish(result);
  }

  /**
   * The turn's answer will not come to this page; history may fill it in — also over its kept copy, as the spec's
   * reattach rules import a lost turn from history.
   */
  markLost(turnId: string): void {
    const view = this.turns.get(turnId);
    if (view && (!view.ended || view.el.dataset.kept !== undefined)) view.lost = true;
  }

  note(text: string, cls?: string): void {
    this.target().note(text, cls);
  }

  /** What this page found out about a turn whose answer it lost, and what it does about it. */
  followed(turnId: string, how: "running" | "queued" | "sent again" | "given back"): void {
    const sentence = {
      running: "Still running: following it.",
      queued: "Waiting for the turn before it; it follows when it starts.",
      "sent again": "The device had not got it: sent again.",
      "given back": "The device had not got it, and its attachments were not kept: not sent again without them.",
    }[how];
    this.turn(turnId).note(sentence, "note reattach");
  }

  /**
   * Frames of the running turns (`turnIds`, and the one frames land in now) did not reach this page: marked, with a
   * note, so that history can replace what is shown once they end (importHistory).
   */
  missed(turnIds: readonly string[]): void {
    // Frames that came without their turn's start landed in a turn shown without an id: it is the running one.
    const unseen = turnIds.filter((id) => id !== "" && !this.turns.has(id));
    if (this.current?.turnId === null && unseen.length === 1) {
      this.current.name(unseen[0]!);
      this.turns.set(unseen[0]!, this.current);
    }
    const views = new Set(turnIds.map((id) => this.turns.get(id)).filter((v) => v !== undefined));
    if (views.size === 0) views.add(this.target());
    for (const view of views) {
      if (view.missing) continue;
      view.missing = true;
      view.note("Some updates of this turn did not reach this page.", "note missed");
    }
  }

  /**
   * A catch-up on a socket dialled again sends these turns' frames from their start (as far as they were kept): a
   * turn shown already is emptied first, its message kept, and rebuilt from them rather than shown twice.
   */
  restart(turnIds: readonly string[]): void {
    for (const turnId of turnIds) {
      const view = this.turns.get(turnId);
      if (!view) continue;
      for (const [toolCallId, tool] of this.tools) if (view.el.contains(tool.el)) this.tools.delete(toolCallId);
      view.clear();
      this.current = view;
    }
  }

  /** A steer message sent for the running turn: shown now, marked taken when the device takes it in. */
  steerSent(messageId: string, text: string): void {
    const el = this.target().note(text, "user steered pending");
    el.dataset.messageId = messageId;
    this.steers.set(messageId, el);
  }

  /** The steer was refused: its note goes (it is sent as a prompt instead, or the error is shown). */
  steerDropped(messageId: string): void {
    this.steers.get(messageId)?.remove();
    this.steers.delete(messageId);
  }

  /** The turn ended before taking these steer messages in: their pending notes go (they are sent as the next turn). */
  steersUnsent(texts: readonly string[]): void {
    for (const [id, el] of this.steers) {
      if (!texts.includes(el.textContent ?? "")) continue;
      el.remove();
      this.steers.delete(id);
    }
  }

  /** A `steered` event: the messages with these ids were taken in. False when none of them was sent from here. */
  takeSteers(ids: readonly string[]): boolean {
    let found = false;
    for (const id of ids) {
      const el = this.steers.get(id);
      if (!el) continue;
      el.classList.remove("pending");
      this.steers.delete(id);
      found = true;
    }
    return found;
  }

  /** A tool call's element, when this transcript shows it. */
  toolElement(toolCallId: string): HTMLElement | null {
    return this.tools.get(toolCallId)?.el ?? null;
  }

  /**
   * A card ended: one line says what was asked, what was answered and by whom (`here`: this page answered it) —
   * once per card, in the turn it was asked in.
   */
  decided(decision: CardDecision, here: boolean): void {
    const key = decision.toolCallId;
    if (this.el.querySelector(`[data-card-decision="${CSS.escape(key)}"]`)) return;
    let by: string = decision.by;
    if (decision.ended === "answered") by = here ? "answered here" : `answered from ${decision.by}`;
    const tool = this.tools.get(key);
    const line = element(
      "p",
      { class: "msg decision", "data-card-decision": key, "data-ended": decision.ended },
      `${DECISION_ASKED[decision.kind]}: `,
      tool ? element("a", { href: `#${toolAnchor(key)}` }, decision.asked) : decision.asked,
      " → ",
      element("strong", {}, decision.answer?.text ?? "no answer"),
      element("span", { class: "decision-by" }, ` · ${by}`),
    );
    const turn = [...this.turns.values()].find((t) => tool && t.el.contains(tool.el)) ?? this.target();
    turn.add(line);
  }

  private target(): TurnView {
    return this.current ?? this.turn(null);
  }

  update(update: acp.SessionUpdate): void {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        if (update.content.type === "text") this.target().agentText(update.content.text);
        else this.target().add(blockElement(update.content));
        break;
      case "agent_thought_chunk":
        if (update.content.type === "text") this.target().thoughtText(update.content.text);
        break;
      case "user_message_chunk":
        // A plain ACP agent replaying a loaded session: each user message starts a turn.
        if (update.content.type === "text") this.prompt(null, update.content.text);
        break;
      case "tool_call":
      case "tool_call_update": {
        let view = this.tools.get(update.toolCallId);
        if (!view) {
          view = new ToolView(update.toolCallId);
          this.tools.set(update.toolCallId, view);
          this.target().add(view.el);
        }
        view.apply(update);
        break;
      }
      case "plan":
        this.target().planEntries(update.entries);
        break;
      case "current_mode_update":
        this.target().note(`Mode: ${update.currentModeId}`);
        break;
    }
  }

  /** An engine event (`_lembas/event`) this page shows. */
  event(event: KnownEvent | { type: string }): void {
    const e = event as KnownEvent;
    switch (e.type) {
      case "prompt":
        this.prompt(e.turnId ?? null, e.text, e.attachments);
        return;
      case "task":
        if (e.state === "start") this.current = this.turn(e.turnId ?? null);
        else this.finish(e.turnId ?? null, null);
        return;
      default:
        this.target().showEvent(e);
    }
  }

  /**
   * A page of the chat's turns as the instance kept them (newest first, each page older than the one before): a
   * turn shown from history is drawn again from its kept copy in its place, one shown live stays, and the others go
   * before the oldest kept turn shown so far.
   */
  importKept(turns: readonly KeptTurn[]): void {
    const anchor = this.past.contains(this.oldestKept) ? this.oldestKept : null;
    for (const turn of [...turns].reverse()) {
      const known = this.turns.get(turn.turnId);
      if (known) {
        if (known.fromHistory) known.fromKept(turn);
        continue;
      }
      const view = new TurnView(turn.turnId);
      this.turns.set(turn.turnId, view);
      view.fromKept(turn);
      insertTurn(this.past, view.el, anchor);
    }
    const oldest = turns.at(-1);
    if (oldest) this.oldestKept = this.turns.get(oldest.turnId)?.el ?? this.oldestKept;
  }

  /** Takes away the turns drawn from the kept copies (a plain agent's replay shows them instead). */
  dropKept(): void {
    for (const [turnId, view] of this.turns) {
      if (view.el.dataset.kept === undefined) continue;
      removeTurn(view.el);
      this.turns.delete(turnId);
    }
    this.oldestKept = null;
  }

  /**
   * The session's history (`_lembas/session/history`): turns not already shown go before everything live, in
   * order; a live turn whose answer this page lost is filled in; turns still running (`running`) are left to
   * their live frames.
   */
  importHistory(turns: readonly HistoryTurn[], running: ReadonlySet<string> = new Set()): void {
    const groups: {
      user: Extract<HistoryTurn, { role: "user" }> | null;
      answers: Extract<HistoryTurn, { role: "assistant" }>[];
    }[] = [];
    for (const t of turns) {
      if (t.role === "user") groups.push({ user: t, answers: [] });
      else {
        if (groups.length === 0) groups.push({ user: null, answers: [] });
        groups.at(-1)!.answers.push(t);
      }
    }
    const before = this.live.firstChild;
    // Turns shown already (kept by the instance, or live) keep their places; the others go in history's order
    // around them: before the first one shown, or after the one shown before them.
    let at = this.past.querySelector<HTMLElement>(".turn");
    for (const g of groups) {
      const id = g.user?.turnId ?? null;
      if (id && running.has(id)) continue;
      const known = id ? this.turns.get(id) : undefined;
      if (known) {
        if (g.user) known.setUser(g.user.text, g.user.attachments);
        if (known.lost || known.missing || (known.keptEmpty && g.answers.length > 0)) known.fill(g.answers);
        at = this.past.contains(known.el) ? nextTurn(known.el) : null;
        continue;
      }
      const view = new TurnView(id);
      view.fromHistory = true;
      if (id) this.turns.set(id, view);
      if (g.user) view.setUser(g.user.text, g.user.attachments);
      view.fill(g.answers);
      insertTurn(this.past, view.el, at);
    }
    if (before === null) this.current = null;
    this.historyLoaded = true;
  }
}

/** What a card asked, and what was decided: the answer and who gave it, or why nobody did. */
export function decisionText(card: Extract<KeptItem, { type: "card" }>): string {
  const d = card.decision;
  if (!d) return `${card.method}: no decision recorded`;
  return `${d.asked} — ${d.answer ? `${d.answer.text} (${d.by})` : d.by}`;
}

function blockElement(block: acp.ContentBlock): HTMLElement {
  const wrap = element("div", { class: "msg agent" });
  wrap.append(blockNode(block));
  return wrap;
}
