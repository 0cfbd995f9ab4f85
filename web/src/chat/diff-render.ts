/**
 * An edit shown as a unified diff (jsdiff's structuredPatch, three lines of context), built as DOM: a header with
 * the path and +added −removed, then each hunk's lines marked added, removed or unchanged.
 */
import { structuredPatch } from "diff";
import { element } from "../dom";

const LINE_KIND: Record<string, "add" | "del"> = { "+": "add", "-": "del" };

export function renderDiff(path: string, oldText: string | null | undefined, newText: string): HTMLElement {
  const patch = structuredPatch(path, path, oldText ?? "", newText, "", "", { context: 3 });
  const count = { added: 0, removed: 0 };
  // It scrolls sideways and down: it takes the focus, so a keyboard can scroll it.
  const body = element("pre", { class: "diff-body", tabindex: 0 });
  for (const hunk of patch.hunks) {
    body.append(
      element(
        "span",
        { class: "diff-hunk" },
        `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`,
      ),
    );
    for (const line of hunk.lines) {
      if (line.startsWith("\\")) continue; // "\ No newline at end of file"
      const kind = LINE_KIND[line[0] ?? " "] ?? "ctx";
      if (kind === "add") count.added++;
      if (kind === "del") count.removed++;
      body.append(element("span", { class: `diff-line ${kind}` }, line));
    }
  }
  return element(
    "figure",
    { class: "diff" },
    element(
      "figcaption",
      {},
      element("span", { class: "diff-path" }, oldText == null ? `${path} (new file)` : path),
      " ",
      element(
        "span",
        { class: "diff-count" },
        element("span", { class: "add", "aria-hidden": "true" }, `+${count.added}`),
        " ",
        element("span", { class: "del", "aria-hidden": "true" }, `−${count.removed}`),
        element("span", { class: "visually-hidden" }, `${count.added} lines added, ${count.removed} removed`),
      ),
    ),
    body,
  );
}
