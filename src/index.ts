/** The Worker: HTTP routes in front, one Durable Object per device behind them. */
import "./protocol/zod-locale";
import type { Env } from "./env";
import { buildRouter } from "./http/routes";
import { sweep } from "./sweep";

export { DeviceLink } from "./link/device-link";
export { RateLimiter } from "./limits/rate-limiter";

const router = buildRouter();

export default {
  fetch: (request, env, ctx) => router.fetch(request, env, ctx),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(sweep(env)),
} satisfies ExportedHandler<Env>;
