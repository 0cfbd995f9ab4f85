/**
 * A push service at http://push.test, played over the Worker's real outbound fetch (miniflare's outboundService,
 * in Node), allowed by the tests' PUSH_EXTRA_ORIGINS. It keeps every message it is sent; what it answers depends
 * on the endpoint's path:
 *   /gone/…   410 Gone (the subscription expired)
 *   /unknown/…   404 Not Found (no such subscription)
 *   /busy/…   503 with Retry-After: 1, the first time each endpoint is tried; 201 afterwards
 *   anything else   201 Created
 * GET http://push.test/_received?endpoint=<url> returns the messages sent to that endpoint: headers and the body
 * (base64url), in order.
 */
export const PUSH_SERVICE = "http://push.test";

interface Received {
  endpoint: string;
  headers: Record<string, string>;
  body: string;
}

const received: Received[] = [];
const triedBusy = new Set<string>();

export async function fakePushService(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/_received") {
    const endpoint = url.searchParams.get("endpoint");
    return Response.json(received.filter((r) => r.endpoint === endpoint));
  }
  if (request.method !== "POST") return new Response("push messages are POSTed", { status: 405 });
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  received.push({
    endpoint: request.url,
    headers,
    body: Buffer.from(await request.arrayBuffer()).toString("base64url"),
  });
  if (url.pathname.startsWith("/gone/"))
    return new Response("push subscription has unsubscribed or expired", { status: 410 });
  if (url.pathname.startsWith("/unknown/")) return new Response("no such subscription", { status: 404 });
  if (url.pathname.startsWith("/busy/") && !triedBusy.has(request.url)) {
    triedBusy.add(request.url);
    return new Response("try later", { status: 503, headers: { "retry-after": "1" } });
  }
  return new Response(null, { status: 201, headers: { location: `${PUSH_SERVICE}/message/${received.length}` } });
}
