/**
 * A push service at http://push.test, played over the Worker's real outbound fetch (miniflare's outboundService,
 * in Node), allowed by the tests' PUSH_EXTRA_ORIGINS. It keeps every message it is sent; what it answers depends
 * on the endpoint's path:
 *   /gone/…   410 Gone (the subscription expired)
 *   /unknown/…   404 Not Found (no such subscription)
 *   /busy/…   503 with Retry-After: 1, the first time each endpoint is tried; 201 afterwards
 *   /redirect/…   307 to the same path under /redirected/
 *   /huge/…   413 with a body of HUGE_BODY_BYTES, made as it is pulled, at most 13 MB a second
 *   /hang/…   no answer, ever
 *   anything else   201 Created
 * GET http://push.test/_received?endpoint=<url> returns the messages sent to that endpoint: headers and the body
 * (base64url), in order. GET /_pulled?endpoint=<url> returns how many bytes of a huge body were made so far.
 */
export const PUSH_SERVICE = "http://push.test";

interface Received {
  endpoint: string;
  headers: Record<string, string>;
  body: string;
}

const received: Received[] = [];
const triedBusy = new Set<string>();
const pulled = new Map<string, { bytes: number }>();

export const HUGE_BODY_BYTES = 64 * 1024 * 1024;
const HUGE_CHUNK = new Uint8Array(64 * 1024).fill(0x78);

/** A body of HUGE_BODY_BYTES made chunk by chunk as it is pulled (5 ms a chunk: at least 5 s for the whole), counting what was made. */
function hugeBody(endpoint: string): ReadableStream<Uint8Array> {
  const made = { bytes: 0 };
  pulled.set(endpoint, made);
  return new ReadableStream({
    async pull(controller) {
      if (made.bytes >= HUGE_BODY_BYTES) return controller.close();
      await new Promise((resolve) => setTimeout(resolve, 5));
      made.bytes += HUGE_CHUNK.byteLength;
      controller.enqueue(HUGE_CHUNK);
    },
  });
}

export async function fakePushService(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/_received") {
    const endpoint = url.searchParams.get("endpoint");
    return Response.json(received.filter((r) => r.endpoint === endpoint));
  }
  if (url.pathname === "/_pulled") return Response.json(pulled.get(url.searchParams.get("endpoint") ?? "") ?? null);
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
  if (url.pathname.startsWith("/redirect/")) {
    const location = `${PUSH_SERVICE}${url.pathname.replace("/redirect/", "/redirected/")}`;
    return new Response(null, { status: 307, headers: { location } });
  }
  if (url.pathname.startsWith("/huge/")) return new Response(hugeBody(request.url), { status: 413 });
  if (url.pathname.startsWith("/hang/")) return new Promise<Response>(() => {});
  if (url.pathname.startsWith("/busy/") && !triedBusy.has(request.url)) {
    triedBusy.add(request.url);
    return new Response("try later", { status: 503, headers: { "retry-after": "1" } });
  }
  return new Response(null, { status: 201, headers: { location: `${PUSH_SERVICE}/message/${received.length}` } });
}
