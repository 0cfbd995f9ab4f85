/**
 * Credits are stored and summed as integers of a micro-credit (1 credit = 1,000,000), so a balance is exact — no
 * floating-point noise — and every amount is bounded, so the ledger can never become Infinity or NaN.
 */

export const MICRO = 1_000_000;
/** The most credits any single amount (a grant, a plan's month, a window's limit, a request's cost) may be. */
export const MAX_CREDITS = 1e9;
export const MAX_MICRO = MAX_CREDITS * MICRO;

/** Credits as the API gives them → micro-credits, rounded to the nearest. */
export const toMicro = (credits: number): number => Math.round(credits * MICRO);

/** Micro-credits → credits as the API shows them (the nearest double to an exact six-decimal number). */
export const toCredits = (micro: number): number => micro / MICRO;
