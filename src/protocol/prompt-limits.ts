/**
 * What a prompt may carry (spec: session/prompt) and how its blocks are weighed, with no schema library behind
 * them, so the web UI checks a prompt before sending it with the same numbers and sums the instance enforces.
 */

/** Decoded size limits of a prompt, as the spec says them: 10 MB a block and 25 MB a prompt, in bytes (not MiB). */
export const PROMPT_LIMITS = { blockBytes: 10_000_000, promptBytes: 25_000_000 } as const;

/**
 * The largest frame a prompt may be: the platform's WebSocket message limit (32 MiB). The largest legal prompt,
 * 25,000,000 bytes as base64, is 33,333,336 characters, which leaves 221,096 bytes of it for the JSON around them.
 */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024;

/** A size in bytes as a sentence says it: 25,000,001 bytes. */
export const byteCount = (bytes: number) => `${String(bytes).replace(/\B(?=(\d{3})+(?!\d))/g, ",")} bytes`;

/** The image types an image block may have. */
export const IMAGE_MIME_TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"] as const;

/** Bytes of a base64 string once decoded. */
export function base64Bytes(data: string): number {
  let padding = 0;
  if (data.endsWith("==")) padding = 2;
  else if (data.endsWith("=")) padding = 1;
  return Math.floor((data.length * 3) / 4) - padding;
}

/** Bytes of a string in UTF-8, without encoding it (a prompt may be megabytes). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00) {
      // A surrogate pair: one 4-byte character for two UTF-16 units.
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** A content block as far as its weight goes: the protocol's schema and the ACP SDK's type are both this. */
type WeighedBlock =
  | { type: "text"; text: string }
  | { type: "resource_link"; uri: string }
  | { type: "image" | "audio"; data: string }
  | { type: "resource"; resource: { text?: string; blob?: string } };

/** What a block weighs decoded: its text, its image or its resource's text or blob. */
export function blockBytes(block: WeighedBlock): number {
  switch (block.type) {
    case "text":
      return utf8Bytes(block.text);
    case "resource_link":
      return utf8Bytes(block.uri);
    case "image":
    case "audio":
      return base64Bytes(block.data);
    case "resource": {
      const { blob, text } = block.resource;
      if (typeof blob === "string") return base64Bytes(blob);
      return typeof text === "string" ? utf8Bytes(text) : 0;
    }
  }
}
