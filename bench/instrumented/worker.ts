/**
 * The real Worker, as the benchmark runs it: src/index.ts's routes and DeviceLink unchanged, with two counters that
 * exist only here (never in a deployed build):
 *   - every D1 statement executed, by where it ran (the Worker's route, or the device's object) and its SQL;
 *   - every construction of a DeviceLink — an object that was evicted (hibernated) is constructed again when its
 *     next event comes, so constructions after an idle period count the objects that had left memory.
 * `GET /api/__bench/counters` answers both (under /api/ so the Worker, not the static assets, serves it). In
 * `wrangler dev` the Worker and its Durable Objects share one isolate, so one module-level tally sees both.
 */
import worker from "../../src/index";
import { DeviceLink as RealDeviceLink } from "../../src/link/device-link";
import type { Env } from "../../src/env";
import { countingD1, type D1Tally } from "./counting-d1";

export { RateLimiter } from "../../src/limits/rate-limiter";

const d1: D1Tally = new Map();
let constructions = 0;

export class DeviceLink extends RealDeviceLink {
  constructor(ctx: DurableObjectState, env: Env) {
    constructions++;
    super(ctx, { ...env, DB: countingD1(env.DB, d1, "object") });
  }
}

/** The route a Worker request ran under, with ids taken out, so its queries group by route. */
const routeOf = (request: Request) =>
  `${request.method} ${new URL(request.url).pathname.replace(/^\/api\/devices\/(?!link$|authorize$|approve$|deny$|token$)[^/]+/, "/api/devices/:id")}`;

export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/api/__bench/counters") {
      return Response.json({ constructions, d1: Object.fromEntries(d1) });
    }
    return worker.fetch(request, { ...env, DB: countingD1(env.DB, d1, routeOf(request)) }, ctx);
  },
} satisfies ExportedHandler<Env>;
