/** A chat exported from its kept turns: as Markdown to read, or as the kept JSON itself. */
import { createTwoFilesPatch } from "diff";
import type { KeptTurn } from "../../../src/protocol/instance";
import { decisionText } from "./transcript";

const fence = (text: string, lang = "") => {
  const ticks = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return `${ticks}${lang}\n${text.replace(/\n$/, "")}\n${ticks}`;
};

const quote = (text: string) =>
  text
    .split("\n")
    .map((line) => `> ${line}`)
    .join("\n");

/** `turns` oldest first. */
export function markdownOf(title: string, turns: readonly KeptTurn[]): string {
  const out = [`# ${title}`];
  for (const turn of turns) {
    out.push(`## ${new Date(turn.endedAt).toISOString().replace("T", " ").slice(0, 16)} UTC`);
    if (turn.prompt) {
      out.push(quote(turn.prompt.text || "(no text)"));
      for (const a of turn.prompt.attachments) out.push(`- attached ${a.name} (${a.mimeType}, ${a.size} bytes)`);
    }
    for (const item of turn.items) {
      switch (item.type) {
        case "text":
          out.push(item.text);
          break;
        case "thought":
          out.push(`<details><summary>Thinking</summary>\n\n${item.text}\n\n</details>`);
          break;
        case "block":
          out.push(`*(${String(item.block.type)})*`);
          break;
        case "tool": {
          const t = item.tool;
          out.push(`**${t.kind ?? "tool"}** ${t.title ?? t.toolCallId}${t.status ? ` — ${t.status}` : ""}`);
          for (const c of (t.content ?? []) as {
            type: string;
            path?: string;
            oldText?: string | null;
            newText?: string;
            content?: { type: string; text?: string };
          }[]) {
            if (c.type === "diff" && c.path)
              out.push(fence(createTwoFilesPatch(c.path, c.path, c.oldText ?? "", c.newText ?? ""), "diff"));
            else if (c.type === "content" && c.content?.type === "text" && c.content.text)
              out.push(fence(c.content.text));
          }
          if (typeof t.rawOutput === "string" && t.rawOutput) out.push(fence(t.rawOutput));
          break;
        }
        case "plan":
          out.push(
            (item.entries as { content: string; status: string }[])
              .map((e) => `- [${e.status === "completed" ? "x" : " "}] ${e.content}`)
              .join("\n"),
          );
          break;
        case "event":
          out.push(`*${item.event.type}*`);
          break;
        case "mode":
          out.push(`*Mode: ${item.modeId}*`);
          break;
        case "card":
          out.push(`*${decisionText(item)}*`);
          break;
      }
    }
    if (turn.stopReason) out.push(`*${turn.stopReason}*`);
  }
  return `${out.join("\n\n")}\n`;
}

/** Has the browser save `text` as a file named `name`. */
export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
