/**
 * Agent text as Markdown (markdown-render.ts), with the renderer and its highlighter fetched when a page first shows
 * Markdown: until then an element shows the text as it is, then its latest text rendered.
 */
import { lazyModule } from "../lazy";

const renderer = lazyModule(() => import("./markdown-render"));
/** Elements given text before the renderer came: each one's latest text. */
const waiting = new Map<HTMLElement, string>();

/** Fills `el` with `text` rendered as Markdown (as plain text until the renderer has come). */
export function setMarkdown(el: HTMLElement, text: string): void {
  const loaded = renderer.loaded();
  if (loaded) {
    waiting.delete(el);
    loaded.setMarkdown(el, text);
    return;
  }
  el.textContent = text;
  waiting.set(el, text);
  // Asked each time, so a fetch that failed (offline) is tried again; the first to come renders them all.
  renderer.whenLoaded(renderWaiting);
}

function renderWaiting(m: typeof import("./markdown-render")): void {
  for (const [el, text] of waiting) m.setMarkdown(el, text);
  waiting.clear();
}
