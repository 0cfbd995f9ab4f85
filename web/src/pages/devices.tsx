/**
 * The person's devices, online first, refreshed every few seconds so a device that links (or drops) shows without
 * a reload: host and platform, the agent and the capabilities its last link listed, when it was last seen; rename
 * and revoke.
 */
import { useEffect, useState } from "preact/hooks";
import { account } from "../app/account";
import { background } from "../app/background";
import { ago } from "../app/format";
import { Confirm, RenameForm } from "../app/inline-forms";
import { type DeviceInfo, devices, messageOf, renameDevice, revokeDevice } from "../app/http";
import { preloadedDevices } from "../app/preloaded";
import { fetchDevicePage } from "./device-chunk";
import { NotificationsPanel } from "./notifications";

const REFRESH_MS = 3_000;

/** The agent a device's last link ran, from its initialize's agentInfo. */
export function agentOf(device: DeviceInfo): string | null {
  const info = device.agent_info;
  if (!info || typeof info !== "object" || !("name" in info) || typeof info.name !== "string") return null;
  return "version" in info && typeof info.version === "string" ? `${info.name} ${info.version}` : info.name;
}

export function capabilitiesOf(device: DeviceInfo): string[] {
  return Array.isArray(device.capabilities) ? device.capabilities.filter((c) => typeof c === "string") : [];
}

/** Online first, then by name. */
const inOrder = (list: DeviceInfo[]) =>
  list.sort((a, b) => Number(b.online) - Number(a.online) || a.name.localeCompare(b.name));

export function DevicesPage() {
  // The page's preloaded answer shows in the first render; without one, the list is asked for after it.
  const [list, setList] = useState<DeviceInfo[] | null>(() => {
    const preloaded = preloadedDevices(account.peek());
    return preloaded && inOrder(preloaded);
  });
  const [error, setError] = useState("");
  const load = async () => {
    try {
      setList(inOrder(await devices()));
      setError("");
    } catch (err) {
      setError(messageOf(err));
    }
  };
  useEffect(() => {
    if (list !== null) fetchDevicePage();
  }, [list !== null]);
  useEffect(() => {
    if (list === null) background(load());
    const timer = setInterval(() => background(load()), REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  return (
    <section class="pad page">
      <h1>Devices</h1>
      <p class="error" role="alert">
        {error}
      </p>
      {list?.length === 0 && (
        <p>
          No device yet. On a machine, run <code>lembas-edge login {location.origin}</code> (or log LLeMbas CLI in) and
          approve the code here.
        </p>
      )}
      <ul class="devices">
        {list?.map((d) => (
          <DeviceRow key={d.id} device={d} changed={() => background(load())} />
        ))}
      </ul>
      {/* Push is offered once there is a device whose cards could reach this browser. */}
      {list && list.length > 0 && <NotificationsPanel />}
    </section>
  );
}

function DeviceRow({ device, changed }: { device: DeviceInfo; changed: () => void }) {
  const [mode, setMode] = useState<"view" | "rename" | "revoke">("view");
  const [error, setError] = useState("");
  const agent = agentOf(device);
  const capabilities = capabilitiesOf(device);
  const act = async (work: Promise<unknown>) => {
    setError("");
    try {
      await work;
      setMode("view");
      changed();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <li class="device-card" data-device-id={device.id}>
      <div class="device-head">
        <a class="device-name" href={`/devices/${encodeURIComponent(device.id)}`}>
          {device.name}
        </a>
        <span class={device.online ? "badge online" : "badge"}>{device.online ? "online" : "offline"}</span>
      </div>
      <p class="muted">
        {[device.host, device.platform].filter(Boolean).join(" · ") || "never linked"}
        {agent && ` · ${agent}`} · last seen {device.online ? "now" : ago(device.last_seen)}
      </p>
      {capabilities.length > 0 && (
        <ul class="chips" aria-label="Capabilities">
          {capabilities.map((c) => (
            <li>{c}</li>
          ))}
        </ul>
      )}
      {mode === "view" && (
        <div class="actions">
          <button type="button" class="secondary" onClick={() => setMode("rename")}>
            Rename
          </button>
          <button type="button" class="secondary danger" onClick={() => setMode("revoke")}>
            Revoke…
          </button>
        </div>
      )}
      {mode === "rename" && (
        <RenameForm
          label={`New name for ${device.name}`}
          value={device.name}
          maxLength={100}
          onSave={(name) => background(act(renameDevice(device.id, name)))}
          onCancel={() => setMode("view")}
        />
      )}
      {mode === "revoke" && (
        <Confirm
          legend={`Revoke ${device.name}`}
          action={`Revoke ${device.name}`}
          keep="Keep it"
          onConfirm={() => background(act(revokeDevice(device.id)))}
          onCancel={() => setMode("view")}
        >
          Revoke {device.name}? Its token stops working and its link closes at once; it must log in again.
        </Confirm>
      )}
      <p class="error" role="alert">
        {error}
      </p>
    </li>
  );
}
