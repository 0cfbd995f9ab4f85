/**
 * An edit shown as a unified diff (jsdiff's structuredPatch, three lines of context), built as DOM: a header with
 * the path and +added −removed, then each hunk's lines marked added, removed or unchanged.
 */
import { structuredPatch } from "diff";
import { h } from "../dom";

const LINE_KIND: Record<string, "add" | "del"> = { "+": "add", "-": "del" };

export function renderDiff(path: string, oldText: string | null | undefined, newText: string): HTMLElement {
  const patch = structuredPatch(path, path, oldText ?? "", newText, "", "", { context: 3 });
  const count = { added: 0, removed: 0 };
  // It scrolls sideways and down: it takes the focus, so a keyboard can scroll it.
  const body = h("pre", { class: "diff-body", tabindex: 0 });
  for (const hunk of patch.hunks) {
    body.append(
      h("span", { class: "diff-hunk" }, `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`),
    );
    for (const line of hunk.lines) {
      if (line.startsWith("\\")) continue; // "\ No newline at end of file"
      const kind = LINE_KIND[line[0] ?? " "] ?? "ctx";
      if (kind === "add") count.added++;
      if (kind === "del") count.removed++;
      body.append(h("span", { class: `diff-line ${kind}` }, line));
    }
  }
  return h(
    "figure",
    { class: "diff" },
    h(
      "figcaption",
      {},
      h("span", { class: "diff-path" }, oldText == null ? `${path} (new file)` : path),
      " ",
      h(
        "span",
        { class: "diff-count" },
        h("span", { class: "add", "aria-hidden": "true" }, `+${count.added}`),
        " ",
        h("span", { class: "del", "aria-hidden": "true" }, `−${count.removed}`),
        h("span", { class: "visually-hidden" }, `${count.added} lines added, ${count.removed} removed`),
      ),
    ),
    body,
  );
}
