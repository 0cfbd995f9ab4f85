/**
 * Whether this instance sends push messages, and with which keys. Push is on when PUSH_VAPID_PUBLIC_KEY,
 * PUSH_VAPID_PRIVATE_KEY and PUSH_CONTACT are all set and fit together; otherwise it is off, and `why` says what
 * is missing or wrong (the push routes answer with it). The keys are imported once per isolate.
 */
import type { Env } from "../env";
import { extraOrigins } from "./endpoints";
import { importVapidKeys, type VapidKeys } from "./vapid";

export type PushSetup = { on: true; vapid: VapidKeys; extraOrigins: string[] } | { on: false; why: string };

type PushEnv = Pick<Env, "PUSH_VAPID_PUBLIC_KEY" | "PUSH_VAPID_PRIVATE_KEY" | "PUSH_CONTACT" | "PUSH_EXTRA_ORIGINS">;

let cached: { from: string; setup: Promise<PushSetup> } | null = null;

async function load(env: PushEnv): Promise<PushSetup> {
  const { PUSH_VAPID_PUBLIC_KEY: pub, PUSH_VAPID_PRIVATE_KEY: priv, PUSH_CONTACT: contact } = env;
  if (!pub || !priv) {
    return {
      on: false,
      why: "push is off: this instance has no VAPID keys (PUSH_VAPID_PUBLIC_KEY, PUSH_VAPID_PRIVATE_KEY)",
    };
  }
  if (!contact) return { on: false, why: "push is off: PUSH_CONTACT (a mailto: address) is not set" };
  try {
    return {
      on: true,
      vapid: await importVapidKeys(pub, priv, contact),
      extraOrigins: extraOrigins(env.PUSH_EXTRA_ORIGINS),
    };
  } catch (err) {
    return { on: false, why: `push is off: ${(err as Error).message}` };
  }
}

/** Whether push is configured at all (the keys and the contact are set), without importing anything. */
export const pushConfigured = (env: PushEnv) =>
  !!(env.PUSH_VAPID_PUBLIC_KEY && env.PUSH_VAPID_PRIVATE_KEY && env.PUSH_CONTACT);

export function pushSetup(env: PushEnv): Promise<PushSetup> {
  const from = JSON.stringify([
    env.PUSH_VAPID_PUBLIC_KEY,
    env.PUSH_VAPID_PRIVATE_KEY,
    env.PUSH_CONTACT,
    env.PUSH_EXTRA_ORIGINS,
  ]);
  if (cached?.from !== from) cached = { from, setup: load(env) };
  return cached.setup;
}
