/**
 * Content as a person sees it, for the transcript and the cards alike: an agent's block (text as Markdown, an image,
 * a resource by its name), a tool call's content (a diff as a diff, text as the output it is: monospace, its line
 * breaks kept, terminal colours stripped, folded past OUTPUT_LINES with "Show all").
 */
import type * as acp from "@agentclientprotocol/sdk";
import { element } from "../dom";
import { renderDiff } from "./diff";
import { setMarkdown } from "./markdown";

/** How many lines of output show before "Show all". */
export const OUTPUT_LINES = 20;

// CSI sequences (colours, cursor moves), OSC sequences (titles, links) and the other two-byte escapes.
// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escapes are control characters
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

/** The text without its terminal escapes (colours, cursor moves). */
export const stripAnsi = (text: string): string => text.replace(ANSI, "");

/** Output as a terminal shows it: monospace, line breaks kept, colours stripped; long output folded. */
export function outputNode(text: string, label = "Output"): HTMLElement {
  const lines = stripAnsi(text).replace(/\r\n?/g, "\n").split("\n");
  if (lines.at(-1) === "") lines.pop();
  // It scrolls: it takes the focus, so a keyboard can scroll it.
  const pre = element("pre", { class: "tool-output", "aria-label": label, tabindex: 0 });
  if (lines.length <= OUTPUT_LINES) {
    pre.textContent = lines.join("\n");
    return pre;
  }
  pre.textContent = lines.slice(0, OUTPUT_LINES).join("\n");
  pre.dataset.folded = "";
  const more = element(
    "button",
    {
      type: "button",
      class: "secondary show-all",
      onclick: () => {
        pre.textContent = lines.join("\n");
        delete pre.dataset.folded;
        more.remove();
      },
    },
    `Show all ${lines.length} lines`,
  );
  return element("div", { class: "output" }, pre, more);
}

/** A content block as a person sees it: text as Markdown, an image, a resource by its name. */
export function blockNode(block: acp.ContentBlock): HTMLElement {
  switch (block.type) {
    case "text": {
      const el = element("div", { class: "md" });
      setMarkdown(el, block.text);
      return el;
    }
    case "image":
      return element("img", {
        class: "attachment-image",
        src: `data:${block.mimeType};base64,${block.data}`,
        alt: "image",
      });
    case "resource_link":
      return element("p", {}, element("code", {}, block.uri));
    case "resource":
      return "text" in block.resource
        ? outputNode(block.resource.text, block.resource.uri)
        : element("p", {}, element("code", {}, block.resource.uri));
    default:
      return element("p", { class: "muted" }, `(${block.type})`);
  }
}

/** One item of a tool call's content: a diff, a terminal by its id, text as output, another block as itself. */
export function toolContentNode(c: acp.ToolCallContent): HTMLElement {
  switch (c.type) {
    case "diff":
      return renderDiff(c.path, c.oldText, c.newText);
    case "terminal":
      return element("p", { class: "muted" }, `Terminal ${c.terminalId}`);
    default:
      return c.content.type === "text" ? outputNode(c.content.text) : blockNode(c.content);
  }
}

/** A tool call's places: each path (and line) as code. */
export function locationsNode(locations: readonly acp.ToolCallLocation[]): HTMLElement {
  return element(
    "ul",
    { class: "tool-locations", "aria-label": "Files" },
    ...locations.map((l) => element("li", {}, element("code", {}, l.line ? `${l.path}:${l.line}` : l.path))),
  );
}
