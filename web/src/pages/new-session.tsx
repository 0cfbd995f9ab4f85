/**
 * A new session on the device: where it works — chosen from the device's places and folders (`_lembas/directories`,
 * each marked whether session/new would accept it and why not; roots such as ~/work come expanded) or typed
 * as an absolute path — and, optionally, its mode, model (the instance's, or one of the device's own) and effort.
 */
import { useEffect, useState } from "preact/hooks";
import type { Dir, DirectoriesResult } from "../../../src/protocol/lembas";
import { background } from "../app/background";
import { messageOf } from "../app/http";
import { chatModels, loadChatModels } from "../app/models";
import { chatPath } from "../app/paths";
import { navigate } from "../app/router";
import type { DeviceStore } from "../link/device-store";

const EFFORTS = ["low", "medium", "high", "off"];

export function NewSession({ store, deviceId }: { store: DeviceStore; deviceId: string }) {
  const [listing, setListing] = useState<DirectoriesResult | null>(null);
  const [cwd, setCwd] = useState("");
  const [error, setError] = useState("");
  const [starting, setStarting] = useState(false);
  const canBrowse = store.link.has("directories");
  const online = store.link.up.value;
  const roots = store.link.status.value?.hello?.limits?.roots ?? [];

  const browse = async (path?: string) => {
    setError("");
    try {
      const result = await store.socket.request<DirectoriesResult>("_lembas/directories", path ? { path } : {});
      setListing(result);
      if ("error" in result && result.error) setError(result.error);
    } catch (err) {
      setError(messageOf(err));
    }
  };

  useEffect(() => {
    loadChatModels();
  }, []);
  useEffect(() => {
    if (online && canBrowse && !listing) background(browse());
    // Without the picker, the first root that is a plain absolute path is where a session starts by default — unless
    // a folder was typed meanwhile: an effect runs after the paint, so its `cwd` may be older than what was typed.
    if (!canBrowse) setCwd((typed) => typed || (roots.find((r) => r.startsWith("/")) ?? ""));
  }, [online, canBrowse]);

  const start = async (form: HTMLFormElement) => {
    const data = new FormData(form);
    const model = String(data.get("model") ?? "").trim();
    const instanceModel = chatModels.value.some((m) => m.id === model);
    setError("");
    setStarting(true);
    try {
      const sessionId = await store.newSession({
        cwd: cwd.trim(),
        mode: String(data.get("mode") ?? "") || undefined,
        ...(model && (instanceModel ? { lembasModel: model } : { model })),
        effort: String(data.get("effort") ?? "") || undefined,
      });
      navigate(chatPath(deviceId, sessionId));
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setStarting(false);
    }
  };

  const modes = store.chats.knownModes.value;
  let dirs: Dir[] = [];
  if (listing) dirs = "places" in listing ? listing.places : listing.entries;
  return (
    <form
      class="new-session"
      onSubmit={(e) => {
        e.preventDefault();
        background(start(e.currentTarget));
      }}
    >
      <h2>New chat</h2>
      {!online && <p class="muted">The device is offline; a chat starts once it links.</p>}
      {canBrowse && listing && (
        <section class="dir-picker" aria-label="Folders on the device">
          <p class="dir-path">
            {"places" in listing ? (
              "Places"
            ) : (
              <>
                {listing.parent && (
                  <button type="button" class="link" onClick={() => background(browse(listing.parent ?? undefined))}>
                    ‹ Up
                  </button>
                )}{" "}
                <code>{listing.path}</code>
              </>
            )}
            {"places" in listing ? null : (
              <button type="button" class="link" onClick={() => background(browse())}>
                Places
              </button>
            )}
          </p>
          <ul class="dirs">
            {dirs.map((d) => (
              <li class={d.path === cwd ? "chosen" : ""}>
                <button
                  type="button"
                  class="dir"
                  aria-pressed={d.path === cwd}
                  disabled={!d.accepted}
                  onClick={() => setCwd(d.path)}
                  title={d.reason}
                >
                  {d.name || d.path}
                  {!d.accepted && <span class="muted"> — {d.reason ?? "not accepted"}</span>}
                </button>
                <button
                  type="button"
                  class="link"
                  aria-label={`Open ${d.name || d.path}`}
                  onClick={() => background(browse(d.path))}
                >
                  ›
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
      <label>
        Folder on the device
        <input
          name="cwd"
          value={cwd}
          onInput={(e) => setCwd(e.currentTarget.value)}
          placeholder={roots[0] ? `e.g. ${roots[0]}` : "/absolute/path/to/project"}
          required
        />
      </label>
      <details class="options">
        <summary>Mode, model and effort</summary>
        {modes.length > 0 && (
          <label>
            Mode
            <select name="mode">
              <option value="">the device's default</option>
              {modes.map((m) => (
                <option value={m.id}>{m.name}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Model (the instance's, or a model of the device's own)
          <input name="model" list="instance-models" placeholder="the device's default" autocomplete="off" />
          <datalist id="instance-models">
            {chatModels.value.map((m) => (
              <option value={m.id} />
            ))}
          </datalist>
        </label>
        <label>
          Effort
          <select name="effort">
            <option value="">the device's default</option>
            {EFFORTS.map((e) => (
              <option value={e}>{e}</option>
            ))}
          </select>
        </label>
      </details>
      <button type="submit" disabled={!online || starting || !cwd.trim()}>
        Start
      </button>
      <p class="error" role="alert">
        {error}
      </p>
    </form>
  );
}
