/**
 * The prompt box's two pickers, as the TUI has them: `@` searches the device's files (capability files) and
 * inserts `@path`, which the device expands when the prompt comes; `/` at the start lists the session's commands
 * (from available_commands_update, or `_lembas/commands` with capability commands) and inserts `/name`. They work
 * on a textarea and a list the composer renders; Enter with no list open sends, Escape with none open stops.
 */
import type { Command, FilesSearchResult } from "../../../src/protocol/lembas";
import { messageOf } from "../app/http";
import { element, replace } from "../dom";
import type { ClientSocket } from "../link/client-socket";

interface Suggestion {
  insert: string;
  label: string;
  hint?: string;
  detail?: string;
}

export interface PickerHost {
  session(): string | null;
  capabilities(): readonly string[];
  commands(sessionId: string): readonly Command[];
  send(): void;
  escape(): void;
}

const SEARCH_DELAY_MS = 150;
const SEARCH_LIMIT = 20;
/** The `@…` just before the caret, after a space or at the start (so an e-mail address is left alone). */
const MENTION = /(?:^|\s)@((?:\\.|[^\s\\])*)$/;
/** A command is only one at the very start of the prompt. */
const COMMAND = /^\/(\S*)$/;

/** How the TUI's picker writes a path and the device's expander reads it: a space or a `#` behind a backslash. */
export const escapePath = (path: string) => path.replace(/[ #]/g, "\\$&");
const unescapePath = (text: string) => text.replace(/\\(.)/g, "$1");

export class Pickers {
  private items: Suggestion[] = [];
  private active = 0;
  /** Where the text being completed starts; a choice replaces it up to the caret. */
  private start = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The search under way; one the person has typed past is withdrawn ($/cancel_request) and its answer dropped. */
  private searching: AbortController | null = null;

  constructor(
    private readonly text: HTMLTextAreaElement,
    private readonly list: HTMLUListElement,
    private readonly socket: ClientSocket,
    private readonly host: PickerHost,
  ) {
    text.addEventListener("input", () => this.update());
    text.addEventListener("keydown", (e) => this.key(e));
    text.addEventListener("blur", () => this.close());
  }

  private update(): void {
    const before = this.text.value.slice(0, this.text.selectionStart);
    const session = this.host.session();
    const command = COMMAND.exec(before);
    if (command && session) {
      this.start = 0;
      this.show(this.commandsMatching(session, command[1]!));
      return;
    }
    const mention = MENTION.exec(before);
    if (mention && session && this.host.capabilities().includes("files")) {
      this.start = before.length - mention[1]!.length - 1;
      this.search(session, unescapePath(mention[1]!));
      return;
    }
    this.close();
  }

  /**
   * The session's commands changed (a skill made during a turn): while the person is typing a command, the list
   * shows the new set at once rather than at their next keystroke.
   */
  commandsChanged(): void {
    const session = this.host.session();
    if (!session || document.activeElement !== this.text) return;
    const command = COMMAND.exec(this.text.value.slice(0, this.text.selectionStart));
    if (command) this.show(this.commandsMatching(session, command[1]!));
  }

  private commandsMatching(sessionId: string, typed: string): Suggestion[] {
    const prefix = typed.toLowerCase();
    return this.host
      .commands(sessionId)
      .filter((c) => c.name.toLowerCase().startsWith(prefix))
      .map((c) => ({ insert: `/${c.name} `, label: `/${c.name}`, hint: c.input?.hint, detail: c.description }));
  }

  private search(sessionId: string, query: string): void {
    this.stopSearch();
    const ask = new AbortController();
    this.searching = ask;
    this.timer = setTimeout(async () => {
      try {
        const res = await this.socket.request<FilesSearchResult>(
          "_lembas/files/search",
          { sessionId, query, limit: SEARCH_LIMIT },
          ask.signal,
        );
        if (ask.signal.aborted) return;
        this.show(
          res.files.map((f) => {
            // A folder is written @dir/, which the device expands to a listing.
            const path = f.kind === "dir" && !f.path.endsWith("/") ? `${f.path}/` : f.path;
            return { insert: `@${escapePath(path)} `, label: path };
          }),
        );
      } catch (err) {
        if (ask.signal.aborted) return;
        this.close();
        this.list.append(element("li", { class: "error" }, `file search failed: ${messageOf(err)}`));
        this.list.hidden = false;
      }
    }, SEARCH_DELAY_MS);
  }

  private show(items: Suggestion[]): void {
    this.items = items;
    this.active = 0;
    if (items.length === 0) {
      this.close();
      return;
    }
    replace(
      this.list,
      ...items.map((s, i) =>
        element(
          "li",
          // mousedown, not click: the prompt box keeps the focus (and its caret) while a match is chosen.
          {
            role: "option",
            onmousedown: (e: Event) => {
              e.preventDefault();
              this.choose(i);
            },
          },
          element("span", { class: "name" }, s.label),
          s.hint ? element("span", { class: "hint" }, ` ${s.hint}`) : null,
          s.detail ? element("span", { class: "muted" }, ` — ${s.detail}`) : null,
        ),
      ),
    );
    this.highlight();
    this.list.hidden = false;
  }

  private highlight(): void {
    for (const [i, li] of [...this.list.children].entries())
      li.setAttribute("aria-selected", String(i === this.active));
  }

  private choose(index: number): void {
    const choice = this.items[index];
    if (!choice) return;
    const value = this.text.value;
    this.text.value = value.slice(0, this.start) + choice.insert + value.slice(this.text.selectionStart);
    const caret = this.start + choice.insert.length;
    this.text.setSelectionRange(caret, caret);
    this.close();
  }

  private stopSearch(): void {
    clearTimeout(this.timer);
    this.searching?.abort();
    this.searching = null;
  }

  close(): void {
    this.stopSearch();
    this.items = [];
    this.list.hidden = true;
    replace(this.list);
  }

  private key(e: KeyboardEvent): void {
    if (e.isComposing) return;
    const open = this.items.length > 0;
    if (open && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      const step = e.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.items.length) % this.items.length;
      this.highlight();
    } else if (open && (e.key === "Enter" || e.key === "Tab") && !e.shiftKey) {
      this.choose(this.active);
    } else if (open && e.key === "Escape") {
      this.close();
    } else if (e.key === "Enter" && !e.shiftKey) {
      this.close();
      this.host.send();
    } else if (e.key === "Escape") {
      this.host.escape();
    } else {
      return;
    }
    e.preventDefault();
  }
}
