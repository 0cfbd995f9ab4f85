/** The web UI's entry: sign in when needed, then route by the URL. */
import { ApiError, me, signOut } from "./api.js";
import { background, h, replace } from "./dom.js";
import { approveView } from "./views/approve.js";
import { devicesView } from "./views/devices.js";
import { deviceView } from "./views/device.js";
import { signInView } from "./views/signin.js";

const root = document.getElementById("app")!;
const bar = document.getElementById("bar")!;
let leave: (() => void) | null = null;

async function route(): Promise<void> {
  leave?.();
  leave = null;
  let who: Awaited<ReturnType<typeof me>>;
  try {
    who = await me();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      replace(bar);
      return signInView(root, () => background(route()));
    }
    throw err;
  }
  replace(
    bar,
    h("span", {}, who.email),
    h("button", { class: "link", onclick: () => background(signOut().then(route)) }, "Sign out"),
  );
  if (location.pathname === "/device") return approveView(root, new URLSearchParams(location.search).get("code") ?? "");
  const m = /^#\/devices\/([^/]+)(?:\/(.+))?$/.exec(location.hash);
  if (m) {
    leave = deviceView(root, decodeURIComponent(m[1]!), m[2] ? decodeURIComponent(m[2]) : null);
    return;
  }
  leave = devicesView(root);
}

window.addEventListener("hashchange", () => background(route()));
background(route());
