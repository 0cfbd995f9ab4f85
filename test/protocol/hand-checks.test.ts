/**
 * The params the relay sees most are checked by hand on its hot path (hand-checks.ts), by the schema when the hand
 * check cannot say yes: a streamed session/update's, and a client's request that names only a session. The verdict
 * must be the schema's on every frame: every combination of the params' members, each valid and invalid in the ways
 * JSON can spell (for session/update, for every kind), is compared with what the schema alone says — and the
 * refusal's words with what the schema alone would say.
 */
import { describe, expect, it } from "vitest";
import { KNOWN_SESSION_UPDATES, SESSION_ID_MAX, SessionUpdateParams, WithSession } from "../../src/protocol/acp";
import { sessionUpdateFits, withSessionFits } from "../../src/protocol/hand-checks";
import { check } from "../../src/protocol/issues";
import { CLIENT_TO_AGENT, checkClientParams, refuseAgentNotification } from "../../src/protocol/methods";

// Each member's spellings as JSON text; undefined leaves the member out.
const SESSION_ID = [
  undefined,
  '""',
  '"ses_1"',
  `"${"s".repeat(SESSION_ID_MAX)}"`,
  `"${"s".repeat(SESSION_ID_MAX + 1)}"`,
  "1",
  "null",
  "{}",
];
const KIND = [
  undefined,
  ...KNOWN_SESSION_UPDATES.flatMap((schema) => schema.shape.sessionUpdate.def.values.map((kind) => `"${kind}"`)),
  '"something_new"',
  '"__proto__"',
  '"constructor"',
  "1",
  "null",
];
const CONTENT = [
  undefined,
  "null",
  "[]",
  "{}",
  '{"type":1}',
  '{"type":"text","text":"hi"}',
  '{"__proto__":{"type":"text"}}',
];
const TOOL_CALL_ID = [undefined, '"call_1"', "7", "null"];
const EXTRA = [
  undefined,
  '"entries":[]',
  '"entries":{}',
  '"currentModeId":"code"',
  '"availableCommands":[{"name":"x"}]',
  '"availableCommands":[{"name":""}]',
];

function object(members: [string, string | undefined][]): string {
  return `{${members
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => (name === "" ? value : `"${name}":${value}`))
    .join(",")}}`;
}

function* updates(): Generator<string> {
  for (const kind of KIND)
    for (const content of CONTENT)
      for (const toolCallId of TOOL_CALL_ID)
        for (const extra of EXTRA)
          yield object([
            ["sessionUpdate", kind],
            ["content", content],
            ["toolCallId", toolCallId],
            ["", extra],
          ]);
  yield* ["null", "[]", '"agent_message_chunk"', "{}"];
}

function* allParams(): Generator<string> {
  for (const sessionId of SESSION_ID)
    for (const update of updates())
      yield object([
        ["sessionId", sessionId],
        ["update", update],
      ]);
  yield* [
    "null",
    "[]",
    '"s"',
    "3",
    '{"sessionId":"ses_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}},"_meta":{"x":1}}',
  ];
}

describe("session/update: the hand check and the schema", () => {
  it("say yes to exactly the same params, and refuse with the schema's words", () => {
    let checked = 0;
    let fastYes = 0;
    for (const text of allParams()) {
      const params = JSON.parse(text) as unknown;
      const schema = check(SessionUpdateParams, params);
      const expected = schema.ok ? null : `invalid params: ${schema.error}`;
      if (sessionUpdateFits(params)) {
        fastYes++;
        expect(schema.ok, text).toBe(true);
      }
      expect(refuseAgentNotification("session/update", params), text).toBe(expected);
      checked++;
    }
    expect(checked).toBeGreaterThan(10_000);
    // The streamed kinds are decided by hand; the check is not a no that always defers.
    expect(fastYes).toBeGreaterThan(1_000);
    expect(
      sessionUpdateFits({
        sessionId: "ses_1",
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
      }),
    ).toBe(true);
  });
});

describe("a request that names only a session: the hand check and the schema", () => {
  it("say yes to exactly the same params, and refuse with the schema's words", () => {
    const methods = Object.values(CLIENT_TO_AGENT).filter((spec) => spec.params === WithSession);
    expect(methods.length).toBeGreaterThanOrEqual(5); // status, history, delete, compact, close …
    let fastYes = 0;
    for (const sessionId of SESSION_ID)
      for (const extra of [undefined, '"cwd":"/w"', '"sessionId2":1', '"__proto__":{"sessionId":"x"}'])
        for (const text of [
          object([
            ["sessionId", sessionId],
            ["", extra],
          ]),
          "null",
          "[]",
          '"s"',
          "3",
        ]) {
          const params = JSON.parse(text) as unknown;
          const schema = check(WithSession, params);
          if (withSessionFits(params)) {
            fastYes++;
            expect(schema.ok, text).toBe(true);
          }
          for (const spec of methods) {
            const both = checkClientParams(spec, params);
            expect(both.ok, text).toBe(schema.ok);
            if (!both.ok && !schema.ok) expect(both.error, text).toBe(schema.error);
          }
        }
    expect(fastYes).toBeGreaterThan(0);
  });
});
