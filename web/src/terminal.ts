/**
 * A shell on the device (capability terminal). It belongs to this page's socket: the instance sends its output to
 * this socket alone and closes it on the device when the socket goes. There is no terminal emulator here on
 * purpose: output is shown as plain text with escape sequences stripped and input goes a line at a time, which
 * serves a line-oriented shell; full-screen programs (an editor, top) will not draw.
 */
import { h } from "./dom.js";
import type { ClientSocket, Params } from "./client-socket.js";

/** A fixed size: the panel does not measure itself or follow resizes. */
const COLS = 100;
const ROWS = 30;

/** CSI (colours, cursor moves), OSC ended by BEL or ST (titles, the shell integration's 133 and 7 marks), charset
 * selections and other two-byte escapes; then the control characters a plain <pre> cannot show. */
const ESCAPES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal control sequences is this pattern's job
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()*+#][ -~]|[^[\]])|[\x00-\x08\x0b-\x1f\x7f]/g;
/** An escape cut off at the end of a frame, kept until the next frame completes it. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above
const UNFINISHED = /\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[()*+#])?$/;

export function stripEscapes(text: string): { shown: string; rest: string } {
  const cut = UNFINISHED.exec(text)?.index ?? text.length;
  return { shown: text.slice(0, cut).replace(ESCAPES, ""), rest: text.slice(cut) };
}

function toBase64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export class TerminalPanel {
  readonly el: HTMLElement;
  private readonly screen = h("pre", { class: "terminal-output", "aria-live": "polite" });
  private readonly line = h("input", {
    class: "terminal-input",
    "aria-label": "Terminal input",
    placeholder: "A command, Enter to send (Ctrl-C interrupts)",
    autocomplete: "off",
    spellcheck: "false",
  });
  /** Streaming, so a character split across two frames is decoded whole. */
  private readonly decoder = new TextDecoder();
  private unfinished = "";
  private ended = false;

  private constructor(
    private readonly socket: ClientSocket,
    readonly terminalId: string,
    cwd: string,
    private readonly onEnd: (note: string) => void,
  ) {
    this.line.addEventListener("keydown", (e) => this.key(e));
    this.el = h(
      "section",
      { class: "terminal", "data-terminal-id": terminalId },
      h(
        "div",
        { class: "terminal-bar" },
        h("span", { class: "muted" }, `Terminal in ${cwd}`),
        h("button", { class: "secondary", onclick: () => this.close() }, "Close"),
      ),
      this.screen,
      this.line,
    );
  }

  static async open(socket: ClientSocket, cwd: string, onEnd: (note: string) => void): Promise<TerminalPanel> {
    const res = await socket.request<{ terminalId: string; cwd: string }>(
      "_lembas/terminal/open",
      cwd ? { cwd, cols: COLS, rows: ROWS } : { cols: COLS, rows: ROWS },
    );
    return new TerminalPanel(socket, res.terminalId, res.cwd, onEnd);
  }

  focus(): void {
    this.line.focus();
  }

  output(data: string): void {
    let bytes: Uint8Array;
    try {
      bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    } catch {
      return; // not base64: nothing that can be shown
    }
    const { shown, rest } = stripEscapes(this.unfinished + this.decoder.decode(bytes, { stream: true }));
    this.unfinished = rest;
    this.screen.append(shown);
    this.screen.scrollTop = this.screen.scrollHeight;
  }

  /** The shell ended on the device. */
  exited(code: unknown): void {
    this.end(`The terminal's shell ended (exit code ${String(code)}).`);
  }

  /** Hangs up: the device sends the shell SIGHUP. */
  close(): void {
    if (!this.ended) this.trySend("_lembas/terminal/close", { terminalId: this.terminalId });
    this.end("Terminal closed.");
  }

  end(note: string): void {
    if (this.ended) return;
    this.ended = true;
    this.el.remove();
    this.onEnd(note);
  }

  private key(e: KeyboardEvent): void {
    if (e.key === "Enter" && !e.isComposing) {
      this.type(`${this.line.value}\r`);
      this.line.value = "";
    } else if (e.ctrlKey && e.key.toLowerCase() === "c" && this.line.selectionStart === this.line.selectionEnd) {
      // With nothing selected to copy, Ctrl-C is the shell's interrupt, as in any terminal.
      this.type("\x03");
      this.line.value = "";
    } else {
      return;
    }
    e.preventDefault();
  }

  private type(data: string): void {
    this.trySend("_lembas/terminal/input", { terminalId: this.terminalId, data: toBase64(data) });
  }

  private trySend(method: string, params: Params): void {
    try {
      this.socket.notify(method, params);
    } catch {
      // The socket is gone, and the instance closed the terminal with it.
      this.end("The connection to the instance closed; so did the terminal.");
    }
  }
}
