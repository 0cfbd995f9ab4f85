/**
 * What a prompt may carry (spec: session/prompt), as plain values with no schema library behind them, so the web
 * UI can check an attachment before sending it with the same numbers the instance enforces.
 */

/** Decoded size limits of a prompt. The spec says 10 MB and 25 MB; read as MiB, so the instance never refuses what
 * the device would take — the device still applies its own limits. */
export const PROMPT_LIMITS = { blockBytes: 10 * 1024 * 1024, promptBytes: 25 * 1024 * 1024 } as const;

/** The image types an image block may have. */
export const IMAGE_MIME_TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"] as const;
