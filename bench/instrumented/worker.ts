/**
 * The real Worker, as the benchmark runs it: src/index.ts's routes and DeviceLink unchanged, with counters that
 * exist only here (never in a deployed build):
 *   - every D1 statement executed, by where it ran (the Worker's route, or the device's object) and its SQL;
 *   - every construction of a DeviceLink — an object that was evicted (hibernated) is constructed again when its
 *     next event comes, so constructions after an idle period count the objects that had left memory;
 *   - while the bench asks for it, every storage commit of the objects and the outputs it held (commit-ledger.ts).
 * `GET /api/__bench/counters` answers the first two; `GET /api/__bench/online` how many devices D1 shows online (the
 * devices API lists every device's whole row, a megabyte at a thousand devices: polled while a wave of objects is in
 * memory, its garbage raised the runtime's RSS for good, by tens of MiB at a time); `POST /api/__bench/commits/start`
 * and `…/stop` bracket a counted stretch, the stop answering its commits (under /api/ so the Worker, not the static
 * assets, serves them).
 * In `wrangler dev` the Worker and its Durable Objects share one isolate, so module-level tallies see both.
 */
import worker from "../../src/index";
import { DeviceLink as RealDeviceLink } from "../../src/link/device-link";
import type { Env } from "../../src/env";
import { adopt, type ObjectLedger, output, startCounting, stopCounting, watch } from "./commit-ledger";
import { countingD1, type D1Tally } from "./counting-d1";

export { RateLimiter } from "../../src/limits/rate-limiter";

const d1: D1Tally = new Map();
let constructions = 0;

export class DeviceLink extends RealDeviceLink {
  readonly #ledger: ObjectLedger;

  constructor(ctx: DurableObjectState, env: Env) {
    constructions++;
    const ledger = watch(ctx);
    super(ctx, { ...env, DB: countingD1(env.DB, d1, "object", () => output(ledger, "D1 query")) });
    this.#ledger = ledger;
  }

  override async fetch(request: Request): Promise<Response> {
    const response = await super.fetch(request);
    output(this.#ledger, "HTTP response");
    return response;
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> | undefined {
    adopt(ws, this.#ledger);
    return super.webSocketMessage(ws, message);
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    adopt(ws, this.#ledger);
    return super.webSocketClose(ws, code, reason);
  }

  override webSocketError(ws: WebSocket): Promise<void> {
    adopt(ws, this.#ledger);
    return super.webSocketError(ws);
  }
}

/** The route a Worker request ran under, with ids taken out, so its queries group by route. */
const routeOf = (request: Request) =>
  `${request.method} ${new URL(request.url).pathname.replace(/^\/api\/devices\/(?!link$|authorize$|approve$|deny$|token$)[^/]+/, "/api/devices/:id")}`;

export default {
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/api/__bench/counters") return Response.json({ constructions, d1: Object.fromEntries(d1) });
    if (path === "/api/__bench/online") {
      return env.DB.prepare("SELECT COUNT(*) AS online FROM devices WHERE online = 1")
        .first<{ online: number }>()
        .then((row) => Response.json({ online: row?.online ?? 0 }));
    }
    if (path === "/api/__bench/commits/start" && request.method === "POST") {
      startCounting();
      return Response.json({});
    }
    if (path === "/api/__bench/commits/stop" && request.method === "POST") return Response.json(stopCounting());
    return worker.fetch(request, { ...env, DB: countingD1(env.DB, d1, routeOf(request)) }, ctx);
  },
} satisfies ExportedHandler<Env>;
