/** The agent's messages while the link is down: kept in order, flushed after the next handshake. */
import type { AnyMessage } from "@agentclientprotocol/sdk";

/** Enough for a turn's worth of streamed updates; a longer outage loses the oldest ones first. */
export const OUTBOX_LIMIT = 1_000;

export class Outbox {
  private readonly queue: AnyMessage[] = [];
  private droppedCount = 0;

  constructor(private readonly limit = OUTBOX_LIMIT) {}

  /** Queues a message; returns true when this push made the queue drop its oldest message. */
  push(message: AnyMessage): boolean {
    this.queue.push(message);
    if (this.queue.length <= this.limit) return false;
    this.queue.shift();
    this.droppedCount++;
    return true;
  }

  /** Everything queued, oldest first, and how many were dropped since the last drain. */
  drain(): { messages: AnyMessage[]; dropped: number } {
    const drained = { messages: this.queue.splice(0), dropped: this.droppedCount };
    this.droppedCount = 0;
    return drained;
  }
}
