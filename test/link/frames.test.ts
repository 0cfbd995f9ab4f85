import { describe, expect, it } from "vitest";
import { linkedDevice } from "../helpers/link";

const MiB = 1024 * 1024;

describe("bad frames", () => {
  it("answers a client's bad frames with -32700, -32600, -32601 and -32602 sentences, and keeps working", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    client.send("{not json");
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: "the frame is not valid JSON" },
    });
    client.send(JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "_instance/status" }]));
    expect((await client.next()).error).toMatchObject({ code: -32600, message: expect.stringContaining("batches") });
    client.send(JSON.stringify({ jsonrpc: "1.0", id: 2, method: "_instance/status" }));
    expect(await client.next()).toMatchObject({ id: 2, error: { code: -32600 } });
    client.send(JSON.stringify({ jsonrpc: "2.0", id: 3 }));
    expect(await client.next()).toMatchObject({ id: 3, error: { code: -32600 } });
    client.send(JSON.stringify({ jsonrpc: "2.0", id: { x: 1 }, method: "_instance/status" }));
    expect(await client.next()).toMatchObject({ id: null, error: { code: -32600 } });
    const unknown = await client.call(4, "session/teleport", { sessionId: "ses_1" });
    expect(unknown.error).toMatchObject({ code: -32601, message: expect.stringContaining("session/teleport") });
    const badParams = await client.call(5, "session/new", { cwd: 42 });
    expect(badParams.error).toMatchObject({ code: -32602, message: expect.stringContaining("cwd") });
    const noBlocks = await client.call(6, "session/prompt", { sessionId: "ses_1", prompt: [] });
    expect(noBlocks.error).toMatchObject({ code: -32602, message: expect.stringContaining("prompt") });
    const cancelWithId = await client.call(7, "session/cancel", { sessionId: "ses_1" });
    expect(cancelWithId.error).toMatchObject({ code: -32600, message: expect.stringContaining("notification") });
    // Nothing of it reached the device, and the relay still works.
    await link.silent();
    client.send({ jsonrpc: "2.0", id: 8, method: "session/new", params: { cwd: "/w" } });
    const forwarded = await link.next();
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { sessionId: "ses_8" } });
    expect((await client.next()).result).toEqual({ sessionId: "ses_8" });
  });

  it("answers a device's bad frames with errors and keeps the link and what is in flight", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    client.send({ jsonrpc: "2.0", id: "keep", method: "session/new", params: { cwd: "/w" } });
    const inFlight = await link.next();
    link.send("]]]");
    expect(await link.next()).toMatchObject({ id: null, error: { code: -32700 } });
    link.send(JSON.stringify({ hello: "world" }));
    expect(await link.next()).toMatchObject({ id: null, error: { code: -32600 } });
    link.send(JSON.stringify({ jsonrpc: "2.0", id: 5, result: {}, method: "x" }));
    expect(await link.next()).toMatchObject({ error: { code: -32600 } });
    // An answer to an id nobody asked is ignored.
    link.send({ jsonrpc: "2.0", id: 999_999, result: {} });
    await client.silent();
    link.send({ jsonrpc: "2.0", id: inFlight.id, result: { sessionId: "ses_k" } });
    expect(await client.next()).toEqual({ jsonrpc: "2.0", id: "keep", result: { sessionId: "ses_k" } });
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
  });

  it("refuses a reused id while the first request with it is in flight", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/a" } });
    await link.next();
    const again = await client.call(1, "session/new", { cwd: "/b" });
    expect(again.error).toMatchObject({ code: -32600, message: expect.stringContaining("already used") });
    await link.silent();
  });
});

describe("frame size limits", () => {
  it("refuses a client frame over 1 MiB that is not a prompt, with the limit in the sentence", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    const title = "x".repeat(1.5 * MiB);
    const answer = await client.call(1, "_lembas/session/title", { sessionId: "ses_1", title });
    expect(answer.error).toMatchObject({ code: -32600 });
    expect(answer.error?.message).toContain("1.0 MiB limit for _lembas/session/title");
    await link.silent();
  });

  /** An image block of exactly `bytes` decoded bytes (base64, padded as it must be). */
  const imageOf = (bytes: number, digit: number) => {
    const whole = Math.floor(bytes / 3);
    const tail = ["", `${digit}${digit}==`, `${digit}${digit}${digit}=`][bytes % 3];
    return { type: "image", data: String(digit).repeat(4 * whole) + tail, mimeType: "image/png" };
  };

  it("relays a prompt of exactly 25,000,000 bytes decoded (three images, 33.3 MB as base64) to the device whole", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    const prompt = [imageOf(8_333_334, 1), imageOf(8_333_333, 2), imageOf(8_333_333, 3)];
    client.send({ jsonrpc: "2.0", id: "big", method: "session/prompt", params: { sessionId: "ses_1", prompt } });
    const forwarded = await link.next(20_000);
    expect(forwarded.params?.prompt).toEqual(prompt);
    link.send({ jsonrpc: "2.0", id: forwarded.id, result: { stopReason: "end_turn" } });
    expect(await client.next(10_000)).toEqual({ jsonrpc: "2.0", id: "big", result: { stopReason: "end_turn" } });
  }, 60_000);

  it("answers a prompt of 25,000,001 bytes decoded -32602 with a sentence, and the device sees nothing", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    const prompt = [imageOf(8_333_334, 1), imageOf(8_333_334, 2), imageOf(8_333_333, 3)];
    const answer = await client.call("over", "session/prompt", { sessionId: "ses_1", prompt });
    expect(answer.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining(
        "a prompt may be at most 25,000,000 bytes decoded; this one is 25,000,001 bytes",
      ),
    });
    await link.silent();
  }, 60_000);

  it("refuses an image block of 10,000,001 bytes decoded with -32602 and a sentence", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    const answer = await client.call("over", "session/prompt", {
      sessionId: "ses_1",
      prompt: [imageOf(10_000_001, 0)],
    });
    expect(answer.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining("a block may be at most 10,000,000 bytes decoded; this one is 10,000,001 bytes"),
    });
    await link.silent();
  }, 60_000);

  it("refuses a frame over 32 MiB with an error and closes the socket with 4413", async () => {
    const { link, client } = await linkedDevice(["attachments"]);
    const blocks = Array.from({ length: 4 }, () => ({
      type: "image",
      data: "AAAA".repeat((9 * MiB) / 4),
      mimeType: "image/png",
    }));
    client.send({
      jsonrpc: "2.0",
      id: "huge",
      method: "session/prompt",
      params: { sessionId: "ses_1", prompt: blocks },
    });
    const answer = await client.next(20_000);
    expect(answer.error).toMatchObject({ code: -32600, message: expect.stringContaining("32.0 MiB limit") });
    expect((await client.closed).code).toBe(4413);
    await link.silent();
  }, 60_000);

  it("closes a device link that sends a frame over 32 MiB with 4413; the link goes down", async () => {
    const { link, client } = await linkedDevice();
    link.send({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "ses_1", pad: "x".repeat(33 * MiB) } });
    expect((await link.closed).code).toBe(4413);
    expect(await client.next(20_000)).toEqual({
      jsonrpc: "2.0",
      method: "_instance/link",
      params: { link: "down", reason: "closed" },
    });
  }, 60_000);
});
