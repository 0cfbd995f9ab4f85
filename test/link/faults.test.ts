/** Faults as a client sees them: what the device sent that could not be used still ends the client's request. */
import { describe, expect, it } from "vitest";
import { MAX_DEPTH } from "../../src/link/runtime/frames";
import { linkedDevice } from "../helpers/link";

/** A value nested `levels` deep (objects and arrays). */
const nested = (levels: number): unknown => (levels <= 1 ? {} : { deeper: nested(levels - 1) });

describe("a device answer refused for its shape", () => {
  for (const [size, padding] of [
    ["short", ""],
    ["long (judged before it is parsed)", "x".repeat(20_000)],
  ] as const) {
    it(`ends the client's request at once with an error naming why — a ${size} answer`, async () => {
      const { link, client } = await linkedDevice();
      client.send({ jsonrpc: "2.0", id: "h1", method: "_lembas/session/history", params: { sessionId: "ses_1" } });
      const asked = await link.next();
      link.send({ jsonrpc: "2.0", id: asked.id, result: { padding, turns: nested(MAX_DEPTH + 5) } });
      const answer = await client.answer("h1");
      expect(answer.error).toMatchObject({ code: -32603, data: { reason: "answer_refused" } });
      expect(answer.error?.message).toContain(`nests deeper than ${MAX_DEPTH} levels`);
      // An answer is not answered: the device hears nothing back.
      await link.silent();
      // The link goes on.
      client.send({ jsonrpc: "2.0", id: "h2", method: "_lembas/session/history", params: { sessionId: "ses_1" } });
      const again = await link.next();
      link.send({ jsonrpc: "2.0", id: again.id, result: { turns: [] } });
      expect((await client.answer("h2")).result).toEqual({ turns: [] });
    });
  }
});
