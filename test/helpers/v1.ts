/** Helpers for the CLI API tests: calls through the real Worker, and the rows and requests they leave behind. */
import { env, SELF } from "cloudflare:test";

export const BASE = "https://lembas.test";

export function call(
  path: string,
  auth: string | null,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  if (auth) headers.authorization = auth;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  return SELF.fetch(`${BASE}${path}`, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: typeof init.body === "string" || init.body === undefined ? init.body : JSON.stringify(init.body),
  });
}

export interface UsageRow {
  user_id: string;
  device_id: string | null;
  model: string;
  tokens_in: number;
  tokens_out: number;
  audio_ms: number;
  characters: number;
  cost_micro: number;
  estimated: number;
  created_at: number;
}

export async function usageRows(userId: string): Promise<UsageRow[]> {
  const { results } = await env.DB.prepare("SELECT * FROM usage WHERE user_id = ? ORDER BY id")
    .bind(userId)
    .all<UsageRow>();
  return results;
}

/** Usage is written after the answer (waitUntil): wait until `count` rows are there. */
export async function waitForUsage(userId: string, count = 1): Promise<UsageRow[]> {
  for (let i = 0; i < 200; i++) {
    const rows = await usageRows(userId);
    if (rows.length >= count) return rows;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`expected ${count} usage row(s) for ${userId}`);
}

export interface ReceivedUpstream {
  url: string;
  authorization: string | null;
  body: string;
}

/** What the scripted provider received whose body contains `tag`. */
export async function upstreamReceived(tag: string): Promise<ReceivedUpstream[]> {
  const response = await fetch(`https://upstream.test/_received?tag=${encodeURIComponent(tag)}`);
  return response.json();
}

/** Releases the scripted provider's held streams whose last message contains `tag`. */
export async function releaseUpstream(tag: string): Promise<void> {
  await fetch(`https://upstream.test/_release?tag=${encodeURIComponent(tag)}`);
}

/** A usage row as if a request had been made at `at` (ms), costing `cost` credits. */
export async function spend(
  userId: string,
  usage: { cost: number; at?: number; deviceId?: string | null; tokensIn?: number; tokensOut?: number },
): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO usage (user_id, device_id, model, tokens_in, tokens_out, cost_micro, created_at) VALUES (?, ?, 'fake/chat', ?, ?, ?, ?)",
  )
    .bind(
      userId,
      usage.deviceId ?? null,
      usage.tokensIn ?? 0,
      usage.tokensOut ?? 0,
      Math.round(usage.cost * 1e6),
      usage.at ?? Date.now(),
    )
    .run();
}

/** Creates or replaces a plan through the admin API. */
export async function putPlan(adminAuth: string, name: string, spec: Record<string, unknown>): Promise<void> {
  const res = await call(`/api/admin/plans/${encodeURIComponent(name)}`, adminAuth, { method: "PUT", body: spec });
  if (res.status !== 200) throw new Error(`plan ${name}: ${res.status} ${await res.text()}`);
}

/** Puts an account on a plan through the admin API. */
export async function assignPlan(adminAuth: string, userId: string, plan: string | null): Promise<void> {
  const res = await call(`/api/admin/accounts/${userId}/plan`, adminAuth, { method: "PUT", body: { plan } });
  if (res.status !== 200) throw new Error(`assign ${plan}: ${res.status} ${await res.text()}`);
}
