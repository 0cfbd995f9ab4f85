/** Web Push subscriptions (table `push_subscriptions`): a person's browsers and what each wants to be told of. */
import type { PushSubscriptionInfo } from "../protocol/http-api";
import type { PushKind } from "../protocol/push";
import { prepared } from "./prepared";

export type { PushSubscriptionInfo };

/** The most subscriptions one person keeps (browsers × profiles); one more is refused. */
export const MAX_SUBSCRIPTIONS_PER_PERSON = 20;

export interface NewPushSubscription {
  endpoint: string;
  p256dh: string;
  auth: string;
  kinds: Record<PushKind, boolean>;
}

interface InfoRow {
  endpoint: string;
  cards: number;
  turn_end: number;
  link_down: number;
  created_at: number;
}

const toInfo = (row: InfoRow): PushSubscriptionInfo => ({
  endpoint: row.endpoint,
  cards: row.cards === 1,
  turn_end: row.turn_end === 1,
  link_down: row.link_down === 1,
  created_at: row.created_at,
});

/**
 * Saves a subscription for the person — new, or the same endpoint again with new keys or kinds (a browser
 * subscribing under another account moves it). Null when the person already has the most allowed.
 */
export async function savePushSubscription(
  db: D1Database,
  userId: string,
  sub: NewPushSubscription,
): Promise<PushSubscriptionInfo | null> {
  const { cards, turn_end, link_down } = sub.kinds;
  const row = await prepared(
    db,
    "INSERT INTO push_subscriptions (endpoint,user_id,p256dh,auth,cards,turn_end,link_down,created_at) " +
      "SELECT ?1,?2,?3,?4,?5,?6,?7,?8 " +
      "WHERE (SELECT COUNT(*) FROM push_subscriptions WHERE user_id=?2 AND endpoint!=?1)<?9 " +
      "ON CONFLICT (endpoint) DO UPDATE SET user_id=excluded.user_id,p256dh=excluded.p256dh,auth=excluded.auth," +
      "cards=excluded.cards,turn_end=excluded.turn_end,link_down=excluded.link_down " +
      "RETURNING endpoint,cards,turn_end,link_down,created_at",
    sub.endpoint,
    userId,
    sub.p256dh,
    sub.auth,
    Number(cards),
    Number(turn_end),
    Number(link_down),
    Date.now(),
    MAX_SUBSCRIPTIONS_PER_PERSON,
  ).first<InfoRow>();
  return row ? toInfo(row) : null;
}

export async function listPushSubscriptions(db: D1Database, userId: string): Promise<PushSubscriptionInfo[]> {
  const { results } = await prepared(
    db,
    "SELECT endpoint,cards,turn_end,link_down,created_at FROM push_subscriptions WHERE user_id=? ORDER BY created_at,endpoint",
    userId,
  ).all<InfoRow>();
  return results.map(toInfo);
}

/** False when the person has no such subscription (someone else's counts as none). */
export async function deletePushSubscription(db: D1Database, userId: string, endpoint: string): Promise<boolean> {
  const { meta } = await prepared(
    db,
    "DELETE FROM push_subscriptions WHERE endpoint=? AND user_id=?",
    endpoint,
    userId,
  ).run();
  return meta.changes > 0;
}

/** The push service said the subscription is gone (404/410). */
export async function forgetPushEndpoint(db: D1Database, endpoint: string): Promise<void> {
  await prepared(db, "DELETE FROM push_subscriptions WHERE endpoint=?", endpoint).run();
}

export interface PushRecipient {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** What a message about one device needs, in one round trip: the recipients, the device's name, the chat's title. */
export interface PushContext {
  recipients: PushRecipient[];
  deviceName: string | null;
  chatTitle: string | null;
}

/** The person's subscriptions that want `kind` (all of them for null), with the device's name and the chat's title. */
export async function pushContext(
  db: D1Database,
  userId: string,
  kind: PushKind | null,
  deviceId: string,
  sessionId: string | null,
): Promise<PushContext> {
  const wants = kind === null ? "" : ` AND ${kind} = 1`;
  const [subs, device, chat] = await db.batch([
    prepared(db, `SELECT endpoint,p256dh,auth FROM push_subscriptions WHERE user_id=?${wants}`, userId),
    prepared(db, "SELECT name FROM devices WHERE id=? AND user_id=?", deviceId, userId),
    prepared(db, "SELECT title FROM chats WHERE device_id=? AND session_id=?", deviceId, sessionId ?? ""),
  ]);
  return {
    recipients: (subs?.results ?? []) as PushRecipient[],
    deviceName: (device?.results[0] as { name: string } | undefined)?.name ?? null,
    chatTitle: (chat?.results[0] as { title: string | null } | undefined)?.title ?? null,
  };
}
