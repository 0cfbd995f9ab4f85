/**
 * A transcript's turns kept in groups of about GROUP, each group skipped as one while out of view
 * (`content-visibility` on `.turn-group`). Chromium checks every skipped element's place against the view each frame
 * the page changes: with a check per turn, a stream into 500 turns spent more of a frame on those checks than on
 * anything else.
 */
import { element } from "../dom";

const GROUP = 10;

const group = (...turns: Element[]) => element("div", { class: "turn-group" }, ...turns);

/** Puts `turn` into `list` before `before` (a turn of the list), or at its end. */
export function insertTurn(list: HTMLElement, turn: HTMLElement, before: HTMLElement | null): void {
  const last = list.lastElementChild;
  const into = before?.parentElement ?? (last && last.childElementCount < GROUP ? last : list.appendChild(group()));
  into.insertBefore(turn, before);
  // Turns put before one another (earlier pages) fill one group: its first GROUP go into a group of their own.
  if (into.childElementCount >= 2 * GROUP) into.before(group(...Array.from(into.children).slice(0, GROUP)));
}

/** Takes `turn` out of its list, and its group with it if that is left empty. */
export function removeTurn(turn: HTMLElement): void {
  const from = turn.parentElement;
  turn.remove();
  if (from?.childElementCount === 0) from.remove();
}

/** The turn after `turn` in its list, or null when it is the last. */
export function nextTurn(turn: HTMLElement): HTMLElement | null {
  return (turn.nextElementSibling ??
    turn.parentElement!.nextElementSibling?.firstElementChild ??
    null) as HTMLElement | null;
}
