/**
 * Files a person attaches to a prompt (capability attachments) — pasted, dropped or picked — as the spec's content
 * blocks: an image as an image block, text as a text resource, anything else as a base64 blob resource. Checked
 * against the instance's own limits (10 MB a block, 25 MB a prompt, decoded) before anything is sent.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { AttachmentInfo } from "../../../src/protocol/lembas";
import { blockBytes, byteCount, IMAGE_MIME_TYPES, PROMPT_LIMITS, utf8Bytes } from "../../../src/protocol/prompt-limits";
import { megabytes } from "../app/format";

/** What a prompt event and history will name it by, and the block that carries it. */
export interface Attachment extends AttachmentInfo {
  block: acp.ContentBlock;
}

const TEXT_TYPES = /^text\/|^application\/(json|xml|javascript|typescript|x-sh|yaml|toml)/;
const IMAGE_TYPES: ReadonlySet<string> = new Set(IMAGE_MIME_TYPES);

function readAs(file: File, how: "text" | "base64"): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`));
    reader.onload = () => {
      const result = String(reader.result);
      resolve(how === "text" ? result : result.slice(result.indexOf(",") + 1));
    };
    if (how === "text") reader.readAsText(file);
    else reader.readAsDataURL(file);
  });
}

/** A name for a pasted image that came without one. */
const nameOf = (file: File) =>
  file.name && file.name !== "image.png" ? file.name : `pasted-${Date.now()}.${file.type.split("/")[1] ?? "bin"}`;

/** A size over its limit, and the limit, as a sentence says them: in MB, or in bytes where MB reads the same. */
const over = (size: number, limit: number) =>
  megabytes(size) === megabytes(limit) ? [byteCount(size), byteCount(limit)] : [megabytes(size), megabytes(limit)];

const fileTooLarge = (name: string, size: number) => {
  const [is, most] = over(size, PROMPT_LIMITS.blockBytes);
  return `${name} is ${is}; one attachment may be at most ${most}.`;
};
const messageTooLarge = (total: number) => {
  const [is, most] = over(total, PROMPT_LIMITS.promptBytes);
  return `Together this is ${is}; a message may carry at most ${most}.`;
};

/**
 * The files as attachments, or a sentence saying which one is over which limit (nothing is taken then).
 * `already` is what the prompt carries so far, in bytes.
 */
export async function attach(files: readonly File[], already: number): Promise<Attachment[] | string> {
  let total = already;
  for (const file of files) {
    if (file.size > PROMPT_LIMITS.blockBytes) return fileTooLarge(file.name || "That file", file.size);
    total += file.size;
  }
  if (total > PROMPT_LIMITS.promptBytes) return messageTooLarge(total);
  const out: Attachment[] = [];
  for (const file of files) {
    const name = nameOf(file);
    const uri = `file:///${encodeURIComponent(name)}`;
    const mimeType = file.type || "application/octet-stream";
    let block: acp.ContentBlock;
    if (IMAGE_TYPES.has(mimeType)) block = { type: "image", data: await readAs(file, "base64"), mimeType, uri };
    else if (TEXT_TYPES.test(mimeType))
      block = { type: "resource", resource: { uri, mimeType, text: await readAs(file, "text") } };
    else block = { type: "resource", resource: { uri, mimeType, blob: await readAs(file, "base64") } };
    out.push({ name, mimeType, size: file.size, block });
  }
  return out;
}

/**
 * The prompt a composer is about to send, checked whole as the instance will check it (decoded, the text counted
 * with the attachments): a sentence saying what is over which limit, or null when it may go.
 */
export function tooLarge(text: string, attachments: readonly Attachment[]): string | null {
  let total = utf8Bytes(text);
  if (total > PROMPT_LIMITS.blockBytes) {
    const [is, most] = over(total, PROMPT_LIMITS.blockBytes);
    return `The text is ${is}; the text of a message may be at most ${most}.`;
  }
  for (const a of attachments) {
    const size = blockBytes(a.block);
    if (size > PROMPT_LIMITS.blockBytes) return fileTooLarge(a.name, size);
    total += size;
  }
  return total > PROMPT_LIMITS.promptBytes ? messageTooLarge(total) : null;
}
