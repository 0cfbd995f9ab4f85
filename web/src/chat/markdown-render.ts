/**
 * Agent text as Markdown: markdown-it with raw HTML off (a tag in the text is shown as text, never parsed), links
 * opened in a new tab without the opener, images shown as links (the page loads nothing from elsewhere), table
 * alignment as classes (no style attributes under the CSP), and fenced code highlighted by highlight.js's core
 * with the languages an agent writes most.
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

const LANGUAGES = { bash, css, diff, go, javascript, json, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
// The names fences use besides the languages' own aliases.
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });

/** Code in the named language, highlighted; "" tells markdown-it to escape it plainly. */
export function highlight(code: string, language: string): string {
  const name = language.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (!name || !hljs.getLanguage(name)) return "";
  try {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  } catch {
    return "";
  }
}

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, highlight });
md.disable("image");

md.core.ruler.push("lembas_safe_attrs", (state) => {
  for (const token of state.tokens) {
    for (const child of [token, ...(token.children ?? [])]) {
      if (child.type === "link_open") {
        child.attrSet("target", "_blank");
        child.attrSet("rel", "noopener noreferrer");
      }
      const style = child.attrGet("style");
      if (style) {
        const align = /text-align:\s*(left|right|center)/.exec(String(style))?.[1];
        child.attrs = (child.attrs ?? []).filter(([name]) => name !== "style");
        if (align) child.attrJoin("class", `align-${align}`);
      }
    }
  }
});

/** The Markdown text as HTML that is safe to set as innerHTML: markdown-it escapes all text and checks link URLs. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** Rendered Markdown (renderMarkdown's HTML) as nodes. A code block may scroll sideways, so it takes the focus. */
export function markdownNodes(html: string): DocumentFragment {
  const template = document.createElement("template");
  template.innerHTML = html;
  for (const pre of template.content.querySelectorAll("pre")) pre.tabIndex = 0;
  return template.content;
}

/** Fills `el` with `text` rendered as Markdown. */
export function setMarkdown(el: HTMLElement, text: string): void {
  el.replaceChildren(markdownNodes(renderMarkdown(text)));
}
