/**
 * The terminal panel: an xterm.js screen sized to the panel (the device's PTY follows it), a Close button, and —
 * for a phone, whose on-screen keyboard types poorly into a canvas of cells and lacks a terminal's keys — a key
 * row (Esc, Tab, the arrows, Ctrl as a modifier for the next key, ^C) and a line input under it.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { messageOf } from "../app/http";
import type { DeviceStore } from "../link/device-store";
import { TerminalSession } from "./terminal-session";

/** The keys a phone's keyboard lacks, as a terminal sends them (xterm's normal cursor mode; with Ctrl, xterm's). */
const KEYS: readonly { label: string; name: string; bytes: string; ctrl?: string }[] = [
  { label: "Esc", name: "Escape", bytes: "\x1b" },
  { label: "Tab", name: "Tab", bytes: "\t" },
  { label: "↑", name: "Up", bytes: "\x1b[A", ctrl: "\x1b[1;5A" },
  { label: "↓", name: "Down", bytes: "\x1b[B", ctrl: "\x1b[1;5B" },
  { label: "←", name: "Left", bytes: "\x1b[D", ctrl: "\x1b[1;5D" },
  { label: "→", name: "Right", bytes: "\x1b[C", ctrl: "\x1b[1;5C" },
];

export function TerminalPanel({
  store,
  cwd,
  onClose,
}: {
  store: DeviceStore;
  cwd: string | null;
  onClose: () => void;
}) {
  const screen = useRef<HTMLDivElement>(null);
  const [session, setSession] = useState<TerminalSession | null>(null);
  const [note, setNote] = useState("Opening a terminal…");
  const [line, setLine] = useState("");
  const [ctrl, setCtrl] = useState(false);

  useEffect(() => {
    let current: TerminalSession | null = null;
    let gone = false;
    TerminalSession.open(store.socket, screen.current!, cwd, (ended) => {
      setNote(ended);
      setSession(null);
      store.terminalSink = null;
    }).then(
      (opened) => {
        if (gone) return opened.close();
        current = opened;
        setSession(opened);
        setNote(opened.info.cwd ? `Terminal in ${opened.info.cwd}` : "Terminal open");
        store.terminalSink = (method, params) => {
          if (method === "link_down") return opened.end("The device's link went down; its terminal closed.");
          if (method === "socket_closed")
            return opened.end("The connection to the instance closed; so did the terminal.");
          if (params.terminalId !== opened.terminalId) return;
          if (method === "_lembas/terminal/output") opened.output(String(params.data ?? ""));
          else opened.exited(typeof params.code === "number" ? params.code : null);
        };
        opened.focus();
      },
      (err: unknown) => setNote(`The terminal did not open: ${messageOf(err)}`),
    );
    return () => {
      gone = true;
      current?.close();
      store.terminalSink = null;
    };
  }, [store]);

  return (
    <section class="terminal-panel" aria-label="Terminal" data-terminal-id={session?.terminalId}>
      <div class="terminal-bar">
        <span class="muted" role="status">
          {note}
        </span>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            session?.close();
            onClose();
          }}
        >
          Close
        </button>
      </div>
      <div class="terminal-screen" ref={screen} />
      {session && (
        <div class="terminal-phone">
          <div class="key-row" role="toolbar" aria-label="Keys">
            {KEYS.map((key) => (
              <button
                type="button"
                class="secondary"
                aria-label={key.name}
                onClick={() => {
                  session.type(ctrl && key.ctrl ? key.ctrl : key.bytes);
                  setCtrl(false);
                }}
              >
                {key.label}
              </button>
            ))}
            <button type="button" class="secondary" aria-pressed={ctrl} onClick={() => setCtrl(!ctrl)}>
              Ctrl
            </button>
            <button type="button" class="secondary" onClick={() => session.type("\x03")} aria-label="Send Ctrl-C">
              ^C
            </button>
          </div>
          <form
            class="terminal-line"
            onSubmit={(e) => {
              e.preventDefault();
              session.type(`${line}\r`);
              setLine("");
            }}
          >
            <input
              aria-label="Terminal input"
              placeholder="A command, Enter to send"
              autocomplete="off"
              autocapitalize="off"
              spellcheck={false}
              value={line}
              onInput={(e) => {
                const typed = e.currentTarget.value;
                const key = typed.slice(line.length);
                // With Ctrl down, the next key typed goes at once as its control character (Ctrl+D: 0x04).
                if (ctrl && typed.length === line.length + 1 && /^[@-_a-z]$/i.test(key)) {
                  e.currentTarget.value = line;
                  session.type(String.fromCharCode(key.toUpperCase().charCodeAt(0) & 0x1f));
                  setCtrl(false);
                  return;
                }
                setLine(typed);
              }}
            />
          </form>
        </div>
      )}
    </section>
  );
}
