/** What a request costs, in micro-credits, from what it used and the model's prices. */
import { MAX_MICRO } from "../db/micro-credits";
import type { ServedModel } from "./config";
import type { TokenCounts } from "./usage-report";

/** What one request used: tokens, and for speech the audio or characters it was priced by. */
export interface Metered extends TokenCounts {
  audioMs?: number;
  characters?: number;
  /** The counts are the instance's estimate, not the provider's report. */
  estimated?: boolean;
}

/**
 * Prices are credits per million tokens (or characters), so a token costs `price` micro-credits; a minute of audio
 * costs `price_minute` credits. Rounded to the micro-credit and capped at the ledger's bound.
 */
export function costMicro(model: ServedModel, m: Metered): number {
  const raw =
    m.tokensIn * model.priceIn +
    m.tokensOut * model.priceOut +
    ((m.audioMs ?? 0) / 60_000) * model.priceMinute * 1e6 +
    (m.characters ?? 0) * model.priceChars;
  return Number.isFinite(raw) ? Math.min(MAX_MICRO, Math.max(0, Math.round(raw))) : MAX_MICRO;
}
