/**
 * Two rules of the wire that every scripted peer checks on each frame it receives, so the whole suite holds them
 * rather than one test: a LLeMbas device (one whose initialize answer says `_meta.lembas`) is never sent ACP's
 * `$/cancel_request`, which the link protocol's capability table does not list; and a client is never sent a frame
 * under the id of a response it gave (JSON-RPC has no reply to a response). A breach is kept here and fails the test
 * it happened in (wire-rules-setup.ts), and the peer's next read fails at once.
 */

interface Frame {
  id?: unknown;
  method?: unknown;
  result?: unknown;
  error?: unknown;
}

const breaches: string[] = [];

/** The breaches seen since the last call, taken. */
export function takeBreaches(): string[] {
  return breaches.splice(0);
}

const isResponse = (frame: Frame) => frame.method === undefined && ("result" in frame || "error" in frame);

/** Whether a device's answer says it speaks the link protocol: an initialize result with `_meta.lembas`. */
export function saysLembas(frame: Frame): boolean {
  if (!isResponse(frame) || typeof frame.result !== "object" || frame.result === null) return false;
  const result = frame.result as { protocolVersion?: unknown; _meta?: { lembas?: unknown } | null };
  return result.protocolVersion !== undefined && result._meta?.lembas != null;
}

/** What a device peer checks: once it said `_meta.lembas`, no `$/cancel_request` may reach it. */
export class DeviceRules {
  /** `lembas`: the device always says `_meta.lembas` (it need not be seen saying so). */
  constructor(private lembas = false) {}

  sent(frame: Frame): void {
    if (saysLembas(frame)) this.lembas = true;
  }

  /** The breach this frame is, recorded, or null. */
  received(frame: Frame): string | null {
    if (!this.lembas || frame.method !== "$/cancel_request") return null;
    return record(`a LLeMbas device was sent $/cancel_request: ${JSON.stringify(frame)}`);
  }
}

/** What a client peer checks: nothing comes back under the id of a response it gave. */
export class ClientRules {
  readonly #answered = new Set<string>();

  sent(frame: Frame): void {
    const id = JSON.stringify(frame.id ?? null);
    if (isResponse(frame)) this.#answered.add(id);
    // The client used the id again for a request of its own: its answer is due.
    else if (frame.method !== undefined) this.#answered.delete(id);
  }

  received(frame: Frame): string | null {
    if (frame.method !== undefined || !this.#answered.has(JSON.stringify(frame.id ?? null))) return null;
    return record(`a client was sent a reply to its own response: ${JSON.stringify(frame)}`);
  }
}

function record(breach: string): string {
  breaches.push(breach);
  return breach;
}
