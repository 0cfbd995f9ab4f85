/**
 * Agent text as Markdown (markdown-render.ts), with the renderer and its highlighter fetched when a page first shows
 * Markdown: until then an element shows the text as it is, then its latest text rendered.
 */
import { lazyModule } from "../lazy";

export type MarkdownRenderer = typeof import("./markdown-render");

const renderer = lazyModule(() => import("./markdown-render"));
/** What waits for the renderer, each by its owner (an element, a streamed text): only the latest of each runs. */
const waiting = new Map<object, (m: MarkdownRenderer) => void>();

/** The renderer if it has come (else undefined, its fetch begun). */
export function markdownRenderer(): MarkdownRenderer | undefined {
  return renderer.loaded();
}

/** Runs `use` once the renderer has come, in place of what `owner` asked before. */
export function whenMarkdownRenderer(owner: object, use: (m: MarkdownRenderer) => void): void {
  waiting.set(owner, use);
  // Asked each time, so a fetch that failed (offline) is tried again; the first to come runs them all.
  renderer.whenLoaded(runWaiting);
}

/** Fills `el` with `text` rendered as Markdown (as plain text until the renderer has come). */
export function setMarkdown(el: HTMLElement, text: string): void {
  const loaded = renderer.loaded();
  if (loaded) {
    waiting.delete(el);
    loaded.setMarkdown(el, text);
    return;
  }
  el.textContent = text;
  whenMarkdownRenderer(el, (m) => m.setMarkdown(el, text));
}

function runWaiting(m: MarkdownRenderer): void {
  for (const use of waiting.values()) use(m);
  waiting.clear();
}
