/** One device's link: its WebSocket, the browser sockets attached to it, and everything in flight between them. */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

export class DeviceLink extends DurableObject<Env> {
  override async fetch(_request: Request): Promise<Response> {
    return new Response(JSON.stringify({ detail: "not implemented yet" }), { status: 501 });
  }
}
