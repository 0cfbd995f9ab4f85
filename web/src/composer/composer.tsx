/**
 * The composer of a chat: one row of the message box, growing with its text, with its `@path` and `/command`
 * pickers, and Send — Steer while a turn runs (capability steer); under it attachments (paste, drop or pick;
 * capability attachments), the running session's mode, model and effort behind one control that opens a sheet
 * (session/set_mode; `_lembas/configure`), and Stop. Enter sends, Shift+Enter is a new line, Escape stops the
 * turn.
 */
import { effect } from "@preact/signals";
import { useEffect, useRef, useState } from "preact/hooks";
import { background } from "../app/background";
import { bytes } from "../app/format";
import { messageOf } from "../app/http";
import { Icon } from "../app/icons";
import { chatModels, loadChatModels, sttModels } from "../app/models";
import type { DeviceStore } from "../link/device-store";
import { type Attachment, attach, tooLarge } from "./attachments";
import { Pickers } from "./pickers";
import { microphoneProblem, type Recording, startRecording } from "./voice";

const EFFORTS = ["low", "medium", "high", "off"];

export function Composer({ store, sessionId }: { store: DeviceStore; sessionId: string }) {
  const text = useRef<HTMLTextAreaElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const [attachments, setAttachments] = useState<Attachment[]>([]);
  const [error, setError] = useState("");
  const [sending, setSending] = useState(false);
  const [voice, setVoice] = useState<"idle" | "starting" | "recording" | "transcribing">("idle");
  const recording = useRef<Recording | null>(null);
  const busy = store.busy.value.has(sessionId);
  const canAttach = store.link.has("attachments");
  const canSteer = store.link.has("steer");
  const online = store.link.up.value;
  // Offline, a device that keeps turns takes a message when it links again: this page keeps it until then.
  const canKeep = store.link.connected.value && store.link.has("turns") && store.link.has("status");
  const settings = store.chats.settings.value.get(sessionId);

  // The handlers the pickers call read the latest state through this ref.
  const latest = useRef({ busy, send: () => {} });
  latest.current.busy = busy;

  const send = async () => {
    const box = text.current!;
    const value = box.value.trim();
    if ((!value && attachments.length === 0) || sending) return;
    // Over a limit, the message stays here, and the sentence says what to take out.
    const problem = tooLarge(value, attachments);
    if (problem) return setError(problem);
    setError("");
    setSending(true);
    const taken = attachments;
    box.value = "";
    setAttachments([]);
    try {
      if (online && busy && canSteer && taken.length === 0) await store.turns.steer(sessionId, value);
      else {
        const blocks = [...(value ? [{ type: "text" as const, text: value }] : []), ...taken.map((a) => a.block)];
        const shown = { text: value, attachments: taken.map(({ name, mimeType, size }) => ({ name, mimeType, size })) };
        // The prompt runs for the whole turn; the box is free again at once.
        background(store.turns.prompt(sessionId, blocks, shown));
      }
    } catch (err) {
      box.value = value;
      setAttachments(taken);
      setError(messageOf(err));
    } finally {
      setSending(false);
    }
  };
  latest.current.send = () => background(send());

  // A message the page could not send again whole comes back here, with the reason.
  useEffect(
    () =>
      effect(() => {
        if (!store.turns.givenBack.value.has(sessionId)) return;
        const given = store.turns.takeBack(sessionId)!;
        const box = text.current!;
        box.value = [given.text, box.value].filter(Boolean).join("\n\n");
        setError(given.reason);
      }),
    [store, sessionId],
  );

  useEffect(() => {
    loadChatModels();
    const pickers = new Pickers(text.current!, list.current!, store.socket, {
      session: () => sessionId,
      capabilities: () => store.link.capabilities.value,
      commands: (id) => store.chats.commands.value.get(id) ?? [],
      send: () => latest.current.send(),
      escape: () => {
        if (latest.current.busy) store.turns.cancel(sessionId);
      },
    });
    // Runs once at once (nothing typed yet), then on every announcement of any session's commands.
    const stopWatching = effect(() => {
      store.chats.commands.value;
      pickers.commandsChanged();
    });
    return () => {
      stopWatching();
      pickers.close();
    };
  }, [store, sessionId]);

  const add = async (files: readonly File[]) => {
    if (files.length === 0) return;
    if (!canAttach) return setError("This device does not take attachments.");
    const result = await attach(
      files,
      attachments.reduce((n, a) => n + a.size, 0),
    );
    if (typeof result === "string") setError(result);
    else {
      setError("");
      setAttachments((all) => [...all, ...result]);
    }
  };

  /** A change to the running session; what went wrong is shown under the box. */
  const run = (work: Promise<unknown>) => background(work.catch((err: unknown) => setError(messageOf(err))));

  const speechModel = sttModels.value[0]?.id;
  const toggleVoice = async () => {
    setError("");
    try {
      if (recording.current) {
        const current = recording.current;
        recording.current = null;
        setVoice("transcribing");
        const heard = (await current.stop()).trim();
        const box = text.current!;
        box.value = [box.value.trimEnd(), heard].filter(Boolean).join(" ");
        box.focus();
      } else if (speechModel) {
        setVoice("starting");
        recording.current = await startRecording(speechModel);
        setVoice("recording");
        return;
      }
    } catch (err) {
      recording.current = null;
      setError(microphoneProblem(err));
    }
    setVoice("idle");
  };
  useEffect(() => () => recording.current?.cancel(), []);

  const models = chatModels.value;
  const modes = settings?.modes?.availableModes ?? store.chats.knownModes.value;
  const modeName = modes.find((m) => m.id === settings?.mode)?.name ?? settings?.mode;
  // What the settings' one control says: the values known, or what it opens.
  const shownSettings = [modeName, settings?.model, settings?.effort].filter((v): v is string => !!v);
  if (shownSettings.length === 0) shownSettings.push("Mode, model, effort");
  const sheetId = `settings-${sessionId}`;

  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: the composer takes dropped files; the Attach button does the same by keyboard
    <div
      class="composer"
      onDragOver={(e) => {
        if (canAttach) e.preventDefault();
      }}
      onDrop={(e) => {
        if (!canAttach) return;
        e.preventDefault();
        background(add([...(e.dataTransfer?.files ?? [])]));
      }}
    >
      {/* biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: the pickers' list of options, chosen from the message box */}
      <ul class="suggestions" role="listbox" aria-label="Suggestions" ref={list} hidden />
      {attachments.length > 0 && (
        <ul class="attachments" aria-label="Attachments">
          {attachments.map((a, i) => (
            <li>
              <span>
                {a.name} <span class="muted">({bytes(a.size)})</span>
              </span>
              <button
                type="button"
                class="icon link"
                aria-label={`Remove ${a.name}`}
                onClick={() => setAttachments((all) => all.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {!online && store.link.connected.value && (
        <p class="composer-offline" role="status">
          The device is offline.{" "}
          {canKeep
            ? "A message sent now is kept here and sent when the device links again."
            : "Messages can be sent when it links again."}
        </p>
      )}
      <p class="error composer-error" role="alert">
        {error}
      </p>
      <div class="composer-row">
        <textarea
          ref={text}
          name="prompt"
          aria-label="Message"
          rows={1}
          placeholder={busy && canSteer ? "Steer the running turn…" : "Message the agent… (@ a file, / a command)"}
          onPaste={(e) => {
            const files = [...(e.clipboardData?.files ?? [])];
            if (files.length === 0) return;
            e.preventDefault();
            background(add(files));
          }}
        />
        <button
          type="button"
          class="icon send"
          aria-label={busy && canSteer ? "Steer" : "Send"}
          title={busy && canSteer ? "Steer the running turn" : "Send"}
          disabled={sending || !(online || canKeep)}
          onClick={() => background(send())}
        >
          <Icon name={busy && canSteer ? "steer" : "send"} />
        </button>
      </div>
      <div class="composer-tools">
        {canAttach && (
          <>
            <input
              ref={fileInput}
              type="file"
              multiple
              class="visually-hidden"
              tabIndex={-1}
              aria-hidden="true"
              onChange={(e) => {
                background(add([...(e.currentTarget.files ?? [])]));
                e.currentTarget.value = "";
              }}
            />
            <button
              type="button"
              class="secondary icon"
              aria-label="Attach files"
              title="Attach files"
              onClick={() => fileInput.current?.click()}
            >
              <Icon name="attach" />
            </button>
          </>
        )}
        {speechModel && (
          <button
            type="button"
            class="secondary icon mic"
            aria-label={voice === "recording" ? "Stop recording" : "Record a voice message"}
            aria-pressed={voice === "recording"}
            title={voice === "recording" ? "Stop recording and write out what was said" : "Speak a message"}
            disabled={voice === "starting" || voice === "transcribing"}
            onClick={() => background(toggleVoice())}
          >
            <Icon name="mic" />
          </button>
        )}
        {voice !== "idle" && (
          <span class="muted voice-state" role="status">
            {voice === "transcribing" ? "Writing it out…" : "Listening…"}
          </span>
        )}
        {(modes.length > 0 || store.link.has("configure")) && (
          <>
            <button
              type="button"
              class="secondary settings-chip"
              popovertarget={sheetId}
              aria-label={`Mode, model and effort: ${shownSettings.join(", ")}`}
            >
              <span aria-hidden="true">{shownSettings.join(" · ")}</span>
            </button>
            <div
              id={sheetId}
              class="sheet session-controls"
              popover="auto"
              role="dialog"
              aria-label="Mode, model and effort"
            >
              <h2>Mode, model and effort</h2>
              {modes.length > 0 && (
                <label>
                  Mode
                  <select
                    value={settings?.mode ?? ""}
                    disabled={!online}
                    onChange={(e) => run(store.chats.setMode(sessionId, e.currentTarget.value))}
                  >
                    {!settings?.mode && <option value="">—</option>}
                    {modes.map((m) => (
                      <option value={m.id}>{m.name}</option>
                    ))}
                  </select>
                </label>
              )}
              {store.link.has("configure") && (
                <>
                  <label>
                    Model
                    <select
                      value=""
                      disabled={!online || busy}
                      onChange={(e) => {
                        const model = e.currentTarget.value;
                        if (model) run(store.chats.configure(sessionId, { model }));
                      }}
                    >
                      <option value="">{settings?.model ?? "as set"}</option>
                      {models.map((m) => (
                        <option value={m.id}>{m.id}</option>
                      ))}
                    </select>
                  </label>
                  <label>
                    Effort
                    <select
                      value={settings?.effort ?? ""}
                      disabled={!online || busy}
                      onChange={(e) => {
                        const effort = e.currentTarget.value;
                        if (effort) run(store.chats.configure(sessionId, { effort }));
                      }}
                    >
                      {!settings?.effort && <option value="">—</option>}
                      {EFFORTS.map((level) => (
                        <option value={level}>{level}</option>
                      ))}
                    </select>
                  </label>
                </>
              )}
              <button type="button" popovertarget={sheetId} popovertargetaction="hide">
                Done
              </button>
            </div>
          </>
        )}
        {busy && (
          <button
            type="button"
            class="secondary icon stop"
            aria-label="Stop"
            title="Stop the turn"
            onClick={() => store.turns.cancel(sessionId)}
          >
            <Icon name="stop" />
          </button>
        )}
      </div>
    </div>
  );
}
