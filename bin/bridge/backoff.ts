/** How long to wait before redialling a dropped link. */

/** The first redial waits about a second. */
export const REDIAL_BASE_MS = 1_000;
/** No wait grows past 30 s: a link that comes back should not sit idle for long. */
export const REDIAL_CAP_MS = 30_000;

/**
 * Exponential backoff with "equal jitter": attempt n waits between half and all of min(cap, base·2ⁿ), so
 * 0.5–1 s, 1–2 s, 2–4 s, … up to 15–30 s. The jitter keeps many devices of one instance from redialling in
 * step after the instance restarts; the floor of half keeps a single device from hammering it.
 */
export function redialDelay(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(REDIAL_CAP_MS, REDIAL_BASE_MS * 2 ** Math.max(0, attempt));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
