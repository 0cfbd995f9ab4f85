/**
 * The registry: the features in the order their hooks run, and each handler found by what it handles. Two features
 * may not claim the same key of a keyed field; an unknown name or a circle in `after` refuses the object at start-up.
 */
import { checkSteps } from "./schema-steps";
import type { Keyed, LinkFeature, Observed, Registry } from "./runtime";

const HANDLER_FIELDS = [
  "clientMethods",
  "deviceRequests",
  "deviceAnswers",
  "cancels",
  "clientAnswers",
  "deadlines",
  "d1Writes",
  "beforeForward",
  "deviceNotifications",
  "relayedAnswers",
] as const satisfies readonly (Keyed | Observed)[];

type HandlerOf<K extends Keyed | Observed> = NonNullable<LinkFeature[K]>[string];

function keyed<K extends Keyed>(features: readonly LinkFeature[], field: K): Map<string, HandlerOf<K>> {
  const map = new Map<string, HandlerOf<K>>();
  const owner = new Map<string, string>();
  for (const feature of features) {
    for (const [key, handler] of Object.entries(feature[field] ?? {}) as [string, HandlerOf<K>][]) {
      if (owner.has(key)) throw new Error(`${field} "${key}" is claimed by both ${owner.get(key)} and ${feature.name}`);
      owner.set(key, feature.name);
      map.set(key, handler);
    }
  }
  return map;
}

function observed<K extends Observed>(features: readonly LinkFeature[], field: K): Map<string, HandlerOf<K>[]> {
  const map = new Map<string, HandlerOf<K>[]>();
  for (const feature of features) {
    for (const [key, handler] of Object.entries(feature[field] ?? {}) as [string, HandlerOf<K>][])
      map.set(key, [...(map.get(key) ?? []), handler]);
  }
  return map;
}

/**
 * The features in an order where each comes after every feature it names in `after`; among those free to go next,
 * the first listed goes first. Throws on a name no feature has, a repeated name, or a circle.
 */
export function orderFeatures(listed: readonly LinkFeature[]): LinkFeature[] {
  const byName = new Map<string, LinkFeature>();
  for (const feature of listed) {
    if (byName.has(feature.name)) throw new Error(`two features are named ${feature.name}`);
    byName.set(feature.name, feature);
  }
  for (const feature of listed) {
    for (const name of feature.after ?? []) {
      if (!byName.has(name)) throw new Error(`${feature.name} runs after ${name}, but no feature is named ${name}`);
    }
  }
  const ordered: LinkFeature[] = [];
  const placed = new Set<string>();
  while (ordered.length < listed.length) {
    const next = listed.find((f) => !placed.has(f.name) && (f.after ?? []).every((name) => placed.has(name)));
    if (!next) {
      const waiting = listed.filter((f) => !placed.has(f.name));
      const why = waiting.map((f) => `${f.name} after ${(f.after ?? []).filter((n) => !placed.has(n)).join(", ")}`);
      throw new Error(`the features' order is impossible (a circle): ${why.join("; ")}`);
    }
    ordered.push(next);
    placed.add(next.name);
  }
  return ordered;
}

export function buildRegistry(listed: readonly LinkFeature[]): Registry {
  const features = orderFeatures(listed);
  for (const feature of features) checkSteps(feature);
  const owners = new WeakMap<object, string>();
  for (const feature of features) {
    for (const field of HANDLER_FIELDS) {
      for (const handler of Object.values(feature[field] ?? {})) owners.set(handler, feature.name);
    }
  }
  return {
    features,
    hookName: (handler, field, key) => `${owners.get(handler) ?? "?"}.${field}(${key})`,
    clientMethods: keyed(features, "clientMethods"),
    deviceRequests: keyed(features, "deviceRequests"),
    deviceAnswers: keyed(features, "deviceAnswers"),
    cancels: keyed(features, "cancels"),
    d1Writes: keyed(features, "d1Writes"),
    clientAnswers: keyed(features, "clientAnswers"),
    deadlines: keyed(features, "deadlines"),
    beforeForward: observed(features, "beforeForward"),
    deviceNotifications: observed(features, "deviceNotifications"),
    relayedAnswers: observed(features, "relayedAnswers"),
  };
}
