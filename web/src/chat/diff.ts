/**
 * An edit shown as a unified diff (diff-render.ts), with jsdiff fetched when a page first shows one: until then the
 * figure shows its path, then fills in.
 */
import { element } from "../dom";
import { lazyModule } from "../lazy";

const renderer = lazyModule(() => import("./diff-render"));

export function renderDiff(path: string, oldText: string | null | undefined, newText: string): HTMLElement {
  const loaded = renderer.loaded();
  if (loaded) return loaded.renderDiff(path, oldText, newText);
  const figure = element("figure", { class: "diff" }, element("figcaption", {}, path));
  renderer.whenLoaded((m) => figure.replaceChildren(...m.renderDiff(path, oldText, newText).childNodes));
  return figure;
}
