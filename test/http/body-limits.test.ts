/**
 * Body size limits: every route reads its body within a cap — a few KiB for most, its own for the routes that carry
 * more — and answers 413 past it, whether the size is declared (Content-Length, refused before anything is read)
 * or the body is streamed without one (read only up to the cap). Nothing is parsed or stored from a body refused.
 */
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { linkDevice } from "../helpers/link";
import { jsonOf } from "../helpers/requests";

const KiB = 1024;
const MiB = 1024 * KiB;

/** A JSON body of about this many bytes: an object with one long string. */
const padded = (bytes: number, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ ...fields, padding: "x".repeat(Math.max(0, bytes - 64)) });

/** The same text sent as a stream with no Content-Length, as a chunked upload arrives. */
function streamed(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + 16 * KiB));
      at += 16 * KiB;
    },
  });
}

function post(path: string, body: BodyInit, headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(`http://localhost${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

const countRows = async (table: string) =>
  (await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table}`).first<{ n: number }>())!.n;

async function expect413(res: Response, cap: string): Promise<void> {
  expect(res.status).toBe(413);
  expect((await jsonOf(res)).detail).toBe(`the body is over the ${cap} this route takes`);
}

describe("a route with the default cap (8 KiB)", () => {
  it("refuses a declared 95 MB sign-in before reading it", async () => {
    const user = await createUser();
    const huge = padded(95 * MiB, { email: user.email, password: user.password });
    await expect413(await post("/api/auth/login", huge), "8 KiB");
    expect(await countRows("sessions")).toBe(1); // the fixture's own, no new sign-in
  });

  it("reads a streamed body only up to the cap", async () => {
    const before = await countRows("device_codes");
    await expect413(await post("/api/devices/authorize", streamed(padded(64 * KiB, { name: "big" }))), "8 KiB");
    expect(await countRows("device_codes")).toBe(before);
  });

  it("takes a body within the cap, streamed or not", async () => {
    expect((await post("/api/devices/authorize", streamed(JSON.stringify({ name: "small" })))).status).toBe(200);
    const user = await createUser();
    const res = await post("/api/tokens", padded(7 * KiB, { name: "fits" }), { authorization: user.apiAuth });
    expect(res.status).toBe(201);
  });
});

describe("routes with caps of their own", () => {
  it("POST /api/devices/:id/rpc takes a frame as large as a socket's (32 MiB), not more", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const { peer } = await linkDevice(device);
    const path = `/api/devices/${device.deviceId}/rpc`;
    const over = new Uint8Array(32 * MiB + 1).fill(0x20);
    await expect413(await post(path, over, { authorization: user.apiAuth }), "32 MiB");
    await peer.silent(50); // nothing reached the device
    // Under the cap the device's object reads it, and holds a non-prompt frame to its own 1 MiB.
    const big = await post(
      path,
      padded(2 * MiB, { jsonrpc: "2.0", id: 1, method: "_lembas/session/status", params: { sessionId: "s" } }),
      { authorization: user.apiAuth },
    );
    expect(await jsonOf(big)).toMatchObject({ id: 1, error: { code: -32600 } });
  });

  it("POST /v1/chat/completions is capped at 8 MiB", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    const res = await post("/v1/chat/completions", padded(8 * MiB + KiB, { model: "fake/chat" }), {
      authorization: device.auth,
    });
    await expect413(res, "8 MiB");
  });
});
