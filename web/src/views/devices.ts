/** The person's devices, online first; refreshed every few seconds so a device that links shows up by itself. */
import { devices } from "../api.js";
import { background, h, replace } from "../dom.js";

const REFRESH_MS = 3_000;

export function devicesView(root: Element): () => void {
  background(render(root));
  const timer = setInterval(() => background(render(root)), REFRESH_MS);
  return () => clearInterval(timer);
}

async function render(root: Element): Promise<void> {
  const list = await devices();
  list.sort((a, b) => Number(b.online) - Number(a.online) || a.name.localeCompare(b.name));
  replace(
    root,
    h("h1", {}, "Devices"),
    list.length === 0
      ? h(
          "p",
          {},
          "No device yet. On a machine, run ",
          h("code", {}, `lembas-edge login ${location.origin}`),
          " (or log LLeMbas CLI in) and approve the code here.",
        )
      : h(
          "ul",
          { class: "devices" },
          ...list.map((d) =>
            h(
              "li",
              {},
              h("a", { href: `#/devices/${encodeURIComponent(d.id)}` }, d.name),
              " ",
              h("span", { class: d.online ? "badge online" : "badge" }, d.online ? "online" : "offline"),
              d.host ? h("span", { class: "muted" }, ` ${d.host} · ${d.platform ?? ""}`) : null,
            ),
          ),
        ),
  );
}
