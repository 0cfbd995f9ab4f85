/**
 * A shell on the device (capability terminal) drawn by xterm.js, so full-screen programs (top, an editor) draw
 * as they would in a terminal. xterm.js and its fit addon load when the first terminal opens (a chunk of their
 * own). The terminal is sized to its panel and follows it (`_lembas/terminal/resize`); it belongs to this page's
 * socket, which the instance routes its output to, and closes with it or with the device's link.
 */
import type { FitAddon } from "@xterm/addon-fit";
import type { Terminal } from "@xterm/xterm";
import type { TerminalOpenResult } from "../../../src/protocol/lembas";
import type { ClientSocket } from "../link/client-socket";
import { buildWithAdoptedStyles } from "./adopt-styles";

/** The spec's bounds of a terminal's size. */
const COLS = { min: 20, max: 500 };
const ROWS = { min: 5, max: 300 };
const clamp = (n: number, { min, max }: { min: number; max: number }) => Math.max(min, Math.min(max, n));

export function toBase64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export class TerminalSession {
  private ended = false;
  private readonly cleanups: (() => void)[] = [];

  private constructor(
    private readonly socket: ClientSocket,
    private readonly term: Terminal,
    private readonly fit: FitAddon,
    readonly info: TerminalOpenResult,
    private readonly onEnd: (note: string) => void,
  ) {}

  /** Draws a terminal in `screen`, measures it, and asks the device for a shell of that size. */
  static async open(
    socket: ClientSocket,
    screen: HTMLElement,
    cwd: string | null,
    onEnd: (note: string) => void,
  ): Promise<TerminalSession> {
    const [{ Terminal }, { FitAddon }] = await Promise.all([import("@xterm/xterm"), import("@xterm/addon-fit")]);
    const dark = matchMedia("(prefers-color-scheme: dark)").matches;
    const term = new Terminal({
      fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
      fontSize: 13,
      cursorBlink: true,
      scrollback: 5000,
      theme: dark
        ? { background: "#0c100e", foreground: "#e4ebe6", cursor: "#5fb98a" }
        : { background: "#fbfcfb", foreground: "#17201b", cursor: "#2f6f4f", selectionBackground: "#2f6f4f44" },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    const releaseStyles = buildWithAdoptedStyles(screen, () => term.open(screen));
    fit.fit();
    let info: TerminalOpenResult;
    try {
      info = await socket.request<TerminalOpenResult>("_lembas/terminal/open", {
        ...(cwd && { cwd }),
        cols: clamp(term.cols, COLS),
        rows: clamp(term.rows, ROWS),
      });
    } catch (err) {
      term.dispose();
      releaseStyles();
      throw err;
    }
    const session = new TerminalSession(socket, term, fit, info, onEnd);
    session.cleanups.push(releaseStyles);
    session.wire(screen);
    return session;
  }

  get terminalId(): string {
    return this.info.terminalId;
  }

  private wire(screen: HTMLElement): void {
    const data = this.term.onData((text) => this.type(text));
    // The device's PTY follows the panel: a size change refits the grid, and the new grid is sent.
    const resized = this.term.onResize(({ cols, rows }) =>
      this.notify("_lembas/terminal/resize", {
        terminalId: this.terminalId,
        cols: clamp(cols, COLS),
        rows: clamp(rows, ROWS),
      }),
    );
    let frame = 0;
    const observer = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        if (!this.ended) this.fit.fit();
      });
    });
    observer.observe(screen);
    this.cleanups.push(
      () => data.dispose(),
      () => resized.dispose(),
      () => observer.disconnect(),
    );
  }

  focus(): void {
    this.term.focus();
  }

  /** Output from the device: bytes, written as they come (xterm decodes UTF-8 across chunks). */
  output(base64: string): void {
    let bytes: Uint8Array;
    try {
      bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    } catch {
      return; // not base64: nothing that can be drawn
    }
    this.term.write(bytes);
  }

  /** Keystrokes, or a line typed in the phone's input. */
  type(text: string): void {
    this.notify("_lembas/terminal/input", { terminalId: this.terminalId, data: toBase64(text) });
  }

  /** The shell ended on the device. */
  exited(code: number | null): void {
    this.end(`The shell ended (exit code ${code ?? "unknown"}).`);
  }

  /** Hangs up: the device sends the shell SIGHUP. */
  close(): void {
    if (!this.ended) this.notify("_lembas/terminal/close", { terminalId: this.terminalId });
    this.end("Terminal closed.");
  }

  end(note: string): void {
    if (this.ended) return;
    this.ended = true;
    for (const cleanup of this.cleanups) cleanup();
    this.term.dispose();
    this.onEnd(note);
  }

  private notify(method: string, params: object): void {
    try {
      this.socket.notify(method, params);
    } catch {
      // The socket is gone, and the instance closed the terminal with it.
      this.end("The connection to the instance closed; so did the terminal.");
    }
  }
}
