/**
 * Path routing for the single-page app: the Worker answers every page path with index.html, and this module keeps
 * the current path in a signal. Same-origin links are followed without a page load; back and forward work.
 */
import { signal } from "@preact/signals";

/** The current location (path and query), as the routes read it. */
export const here = signal(new URL(location.href));

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = new URL(to, location.href);
  if (url.href === location.href) return;
  if (options.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  here.value = url;
}

window.addEventListener("popstate", () => {
  here.value = new URL(location.href);
});

document.addEventListener("click", (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target instanceof Element ? e.target.closest("a") : null;
  if (!a || a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, location.href);
  // The API and the static files are the Worker's, not pages of the app.
  if (url.origin !== location.origin || /^\/(api|v1|js|\.well-known)\//.test(url.pathname)) return;
  e.preventDefault();
  navigate(url.href);
});
