/** What the bridge lets through from the instance to the agent: JSON-RPC 2.0 messages, and nothing else. */
import { describe, expect, it } from "vitest";
import { readFrame } from "../../bin/bridge/frames.js";

describe("readFrame", () => {
  it.each([
    ['{"jsonrpc":"2.0","method":"session/cancel"}', null],
    ['{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/w"}}', null],
    ['{"jsonrpc":"2.0","id":"a","method":"initialize"}', "a"],
    ['{"jsonrpc":"2.0","id":0,"result":null}', null],
    ['{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}', null],
  ])("passes %s on intact", (text, initializeId) => {
    expect(readFrame(text)).toEqual({ kind: "message", message: JSON.parse(text), initializeId });
  });

  it("keeps fields it does not know, such as _meta", () => {
    const text =
      '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]},"_meta":{"x":1}}';
    expect(readFrame(text)).toMatchObject({ kind: "message", message: JSON.parse(text) });
  });

  it.each([
    ["{not json", "not JSON"],
    ["[1,2]", "not a JSON-RPC 2.0 message"],
    ['{"jsonrpc":"1.0","method":"x"}', "not a JSON-RPC 2.0 message"],
    ['{"jsonrpc":"2.0","id":1}', "not a JSON-RPC 2.0 message"],
    ['{"jsonrpc":"2.0","id":{},"method":"x"}', "not a JSON-RPC 2.0 message"],
  ])("refuses %s", (text, why) => {
    expect(readFrame(text)).toEqual({ kind: "invalid", why });
  });
});
