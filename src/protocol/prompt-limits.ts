/**
 * What a prompt may carry (spec: session/prompt), as plain values with no schema library behind them, so the web
 * UI can check an attachment before sending it with the same numbers the instance enforces.
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
