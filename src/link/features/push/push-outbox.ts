/**
 * Push messages the object has to send, in its SQLite, so none is lost to an eviction. A message is queued in the
 * event that decides it (a row, and a deadline as a safety net) and sent at once in the background — never awaited
 * by a frame. Its recipients are read from D1 when it is sent: the owner's subscriptions that want its kind (or,
 * for `settled`, the browsers that got the card), with the device's name and the chat's title for its text. Each
 * browser's push service decides: delivered; gone (404/410: the subscription is removed from D1); refused (given
 * up for that browser); or retry — the row stays and the object's one alarm tries those browsers again after a
 * back-off (or the push service's Retry-After), at most MAX_ATTEMPTS times.
 *
 * A card's row outlives its sending while the card is open: when the card ends, the browsers that got it are sent
 * `settled` (same Topic, so one still waiting at the push service is replaced) and the row goes.
 */
import { forgetPushEndpoint, pushContext, type PushContext } from "../../../db/push-subscriptions";
import type { PushKind, PushPayload } from "../../../protocol/push";
import { fitPayload } from "../../../push/payload";
import { sendPush, topicOf, type Delivery, type PushMessage } from "../../../push/send";
import { pushSetup } from "../../../push/setup";
import type { Migrating } from "../../runtime/schema-steps";
import { OnDemandTables } from "../../runtime/tables-on-demand";
import { perObject } from "../../runtime/per-object";
import { deviceOf } from "../../runtime/background";
import type { LinkRuntime } from "../../runtime/runtime";

export const PUSH_DEADLINE = "push";
/** Waits before each retry; the first is also the safety net for a send cut short by an eviction. */
const BACKOFF_MS = [30_000, 2 * 60_000, 10 * 60_000, 30 * 60_000] as const;
export const MAX_ATTEMPTS = BACKOFF_MS.length + 1;

/** The push feature's tables (push.ts): made by the first message queued. */
export const PUSH_OUTBOX: Migrating = {
  name: "push",
  onDemand: true,
  migrations: [
    {
      step: 1,
      run: [
        "CREATE TABLE push_outbox (" +
          "id INTEGER PRIMARY KEY,kind TEXT NOT NULL,session_id TEXT,tool_call_id TEXT," +
          "payload TEXT NOT NULL,ttl INTEGER NOT NULL,urgency TEXT NOT NULL," +
          "only_to TEXT,delivered TEXT NOT NULL DEFAULT '[]',finished TEXT NOT NULL DEFAULT '[]'," +
          "attempts INTEGER NOT NULL DEFAULT 0,sent INTEGER NOT NULL DEFAULT 0,created_at INTEGER NOT NULL)",
        `CREATE INDEX push_outbox_card ON push_outbox (session_id,tool_call_id)`,
      ],
    },
  ],
};

const outboxOf = (rt: LinkRuntime) => new OnDemandTables(rt.sql, PUSH_OUTBOX);

export interface PushDraft {
  kind: PushKind | "settled";
  payload: PushPayload;
  ttl: number;
  urgency: PushMessage["urgency"];
  /** Only these endpoints (settled: the browsers that got the card); null: every subscription wanting the kind. */
  onlyTo?: string[] | null;
}

interface OutboxRow extends Record<string, SqlStorageValue> {
  id: number;
  kind: string;
  session_id: string | null;
  tool_call_id: string | null;
  payload: string;
  ttl: number;
  urgency: string;
  only_to: string | null;
  delivered: string;
  finished: string;
  attempts: number;
  sent: number;
}

/** Rows being sent right now by this instance of the object (an alarm must not send them a second time). */
const inFlight = perObject((_rt: LinkRuntime) => new Set<number>());

const list = (text: string | null) => (text === null ? null : (JSON.parse(text) as string[]));

/** Queues a message and starts sending it. */
export function queuePush(rt: LinkRuntime, draft: PushDraft): void {
  const payload = draft.payload;
  const toolCallId = payload.kind === "card" || payload.kind === "settled" ? payload.toolCallId : null;
  const id = outboxOf(rt).making(
    (sql) =>
      sql
        .exec<{ id: number }>(
          "INSERT INTO push_outbox (kind,session_id,tool_call_id,payload,ttl,urgency,only_to,created_at) " +
            "VALUES (?,?,?,?,?,?,?,?) RETURNING id",
          draft.kind,
          payload.sessionId,
          toolCallId,
          JSON.stringify(payload),
          draft.ttl,
          draft.urgency,
          draft.onlyTo ? JSON.stringify(draft.onlyTo) : null,
          Date.now(),
        )
        .one().id,
  );
  rt.deadlines.set(PUSH_DEADLINE, String(id), Date.now() + BACKOFF_MS[0]);
  startSending(rt, id);
}

function startSending(rt: LinkRuntime, id: number): void {
  const busy = inFlight(rt);
  if (busy.has(id)) return;
  busy.add(id);
  rt.ctx.waitUntil(
    attempt(rt, id)
      .catch((err: unknown) => console.error(`push message ${id} failed`, err))
      .finally(() => busy.delete(id)),
  );
}

/** The alarm: a message whose back-off is over (or whose send an eviction cut short) is tried again. */
export function retryPush(rt: LinkRuntime, key: string): void {
  const id = Number(key);
  if (inFlight(rt).has(id)) rt.deadlines.set(PUSH_DEADLINE, key, Date.now() + BACKOFF_MS[0]);
  else startSending(rt, id);
}

/** The shown text with the device's name and the chat's title, which only D1 knows. */
function decorate(payload: PushPayload, context: PushContext): PushPayload {
  if (payload.kind === "settled") return payload;
  const title = context.deviceName ? `${payload.title} · ${context.deviceName}` : payload.title;
  const body = context.chatTitle ? `${context.chatTitle}\n${payload.body}` : payload.body;
  return { ...payload, title, body };
}

async function attempt(rt: LinkRuntime, id: number): Promise<void> {
  const row = outboxOf(rt).ifMade(
    undefined,
    (sql) => sql.exec<OutboxRow>("SELECT * FROM push_outbox WHERE id=?", id).toArray()[0],
  );
  if (!row || row.sent === 1) return;
  const setup = await pushSetup(rt.env);
  const { deviceId, ownerId } = deviceOf(rt);
  if (!setup.on || !ownerId) return finish(rt, row, []);
  const payload = JSON.parse(row.payload) as PushPayload;
  const kind = row.kind === "settled" ? null : (row.kind as PushKind);
  const context = await pushContext(rt.env.DB, ownerId, kind, deviceId, payload.sessionId);
  const only = list(row.only_to);
  const finished = new Set(list(row.finished));
  const recipients = context.recipients.filter(
    (r) => !finished.has(r.endpoint) && (only === null || only.includes(r.endpoint)),
  );
  const json = fitPayload(decorate(payload, context));
  if (json === null) {
    console.error(`push message ${id} does not fit a push message; not sent`);
    return finish(rt, row, []);
  }
  const message: PushMessage = {
    json,
    ttl: row.ttl,
    urgency: row.urgency as PushMessage["urgency"],
    topic: await topicOf(payload.tag),
  };
  // Each browser's outcome is recorded as it comes: one slow or failing push service holds back no other.
  const retry: Delivery[] = [];
  await Promise.all(
    recipients.map(async (r) => {
      const delivery = await sendPush(setup.vapid, r, message);
      if (delivery.outcome === "retry") {
        if (delivery.status === null) console.error(`push message ${id}: no answer from ${new URL(r.endpoint).origin}`);
        retry.push(delivery);
        return;
      }
      if (delivery.outcome === "refused")
        console.error(`push service refused message ${id} (${delivery.status}): ${delivery.detail}`);
      record(rt, row, payload, r.endpoint, delivery);
      if (delivery.outcome === "gone") await forgetPushEndpoint(rt.env.DB, r.endpoint);
    }),
  );
  const now = Date.now();
  const stored = outboxOf(rt).ifMade(
    undefined,
    (sql) =>
      sql.exec<OutboxRow>("UPDATE push_outbox SET attempts=attempts + 1 WHERE id=? RETURNING *", id).toArray()[0],
  );
  // The card ended while this was being sent: what was delivered was settled as it came (record).
  if (!stored) return;
  if (retry.length > 0 && stored.attempts < MAX_ATTEMPTS) {
    const after = Math.max(
      BACKOFF_MS[stored.attempts - 1] ?? BACKOFF_MS.at(-1)!,
      ...retry.map((d) => (d.outcome === "retry" ? (d.retryAfterMs ?? 0) : 0)),
    );
    rt.deadlines.set(PUSH_DEADLINE, String(id), now + after);
    return;
  }
  if (retry.length > 0) console.error(`push message ${id}: ${retry.length} browser(s) never took it; given up`);
  finish(rt, stored, list(stored.delivered) ?? []);
}

/** One browser is done with a message: delivered, gone or refused. */
function record(rt: LinkRuntime, row: OutboxRow, payload: PushPayload, endpoint: string, delivery: Delivery): void {
  const delivered = delivery.outcome === "delivered";
  const stored = outboxOf(rt).ifMade(undefined, (sql) => {
    const current = sql
      .exec<Pick<OutboxRow, "delivered" | "finished">>("SELECT delivered,finished FROM push_outbox WHERE id=?", row.id)
      .toArray()[0];
    if (!current) return undefined;
    const wasDelivered = list(current.delivered) ?? [];
    sql.exec(
      "UPDATE push_outbox SET delivered=?,finished=? WHERE id=?",
      JSON.stringify(delivered ? [...wasDelivered, endpoint] : wasDelivered),
      JSON.stringify([...(list(current.finished) ?? []), endpoint]),
      row.id,
    );
    return current;
  });
  // The card ended while this was being sent: the browser that just got it is told at once.
  if (!stored && row.kind === "cards" && delivered) settleCard(rt, payload, [endpoint]);
}

/** Sending is over: a card's row stays (marked sent) while its card is open and some browser got it. */
function finish(rt: LinkRuntime, row: OutboxRow, delivered: string[]): void {
  rt.deadlines.clear(PUSH_DEADLINE, String(row.id));
  outboxOf(rt).ifMade(undefined, (sql) => {
    if (row.kind === "cards" && delivered.length > 0) sql.exec("UPDATE push_outbox SET sent=1 WHERE id=?", row.id);
    else sql.exec("DELETE FROM push_outbox WHERE id=?", row.id);
  });
}

function settleCard(rt: LinkRuntime, card: PushPayload, endpoints: string[]): void {
  if (card.kind !== "card") return;
  const { tag, deviceId, sessionId, toolCallId } = card;
  queuePush(rt, {
    kind: "settled",
    payload: { v: 1, kind: "settled", tag, deviceId, sessionId, toolCallId },
    ttl: 3600,
    urgency: "normal",
    onlyTo: endpoints,
  });
}

/**
 * A card ended: its message is no longer sent, and the browsers that got it are told to close it. A send still
 * under way settles what it delivers itself (attempt, above).
 */
export function cardEnded(rt: LinkRuntime, sessionId: string, toolCallId: string): void {
  const rows = outboxOf(rt).ifMade([], (sql) =>
    sql
      .exec<OutboxRow>(
        "DELETE FROM push_outbox WHERE kind='cards' AND session_id=? AND tool_call_id=? RETURNING *",
        sessionId,
        toolCallId,
      )
      .toArray(),
  );
  for (const row of rows) {
    rt.deadlines.clear(PUSH_DEADLINE, String(row.id));
    const delivered = list(row.delivered) ?? [];
    if (delivered.length > 0) settleCard(rt, JSON.parse(row.payload) as PushPayload, delivered);
  }
}
