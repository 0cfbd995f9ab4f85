/**
 * The JSON-RPC envelope is checked by hand on the hot path (classify, src/protocol/jsonrpc.ts) and by the zod
 * schemas when that check says no. Both must agree on every frame: the same messages accepted, built alike (the
 * same members in the same order, unknown ones dropped), and the same refusals with the same words. Every
 * combination of the envelope's members, each valid and invalid in the ways JSON can spell, is compared with what
 * the schemas alone say.
 */
import { describe, expect, it } from "vitest";
import { describeIssues } from "../../src/protocol/issues";
import {
  classify,
  ErrorCode,
  ErrorMessage,
  NotificationMessage,
  RequestMessage,
  rpcError,
  SuccessMessage,
} from "../../src/protocol/jsonrpc";

/** What the envelope schemas alone make of a JSON object that claims to be a message. */
function bySchemas(value: Record<string, unknown>) {
  const call = "id" in value ? RequestMessage : NotificationMessage;
  const answer = "error" in value ? ErrorMessage : SuccessMessage;
  const schema = "method" in value ? call : answer;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const id = "id" in value && (typeof value.id === "string" || Number.isFinite(value.id)) ? value.id : null;
  return rpcError(
    id as string | number | null,
    ErrorCode.InvalidRequest,
    `not a JSON-RPC 2.0 message: ${describeIssues(parsed.error)}`,
  );
}

// Each member's spellings as JSON text; undefined leaves the member out.
const JSONRPC = [undefined, '"2.0"', '"2"', "2", "null"];
const ID = [undefined, "0", "-7", "1.5", "1e999", '"a"', '""', "null", "true", "{}", "[1]"];
const METHOD = [undefined, '"m"', '""', "1", "null"];
const PARAMS = [undefined, "{}", '{"a":1}', '{"__proto__":{"x":1},"b":[2]}', "[]", "[1,{}]", "null", '"s"', "3"];
const RESULT = [undefined, "null", "1", '{"k":"v"}'];
const ERROR = [
  undefined,
  '{"code":-32000,"message":"m"}',
  '{"code":-32000,"message":"m","data":null}',
  '{"message":"m","code":1,"extra":true}',
  '{"code":1.5,"message":"m"}',
  '{"code":9007199254740992,"message":"m"}',
  '{"code":"1","message":"m"}',
  '{"code":1,"message":2}',
  '{"code":1}',
  "null",
  "[]",
];
const EXTRA = [undefined, '"x":1', '"__proto__":{"y":1}'];

function* frames(): Generator<string> {
  for (const jsonrpc of JSONRPC)
    for (const id of ID)
      for (const method of METHOD)
        for (const params of PARAMS)
          for (const result of RESULT)
            for (const error of ERROR)
              for (const extra of EXTRA) {
                const members = [
                  extra,
                  params === undefined ? undefined : `"params":${params}`,
                  method === undefined ? undefined : `"method":${method}`,
                  id === undefined ? undefined : `"id":${id}`,
                  jsonrpc === undefined ? undefined : `"jsonrpc":${jsonrpc}`,
                  result === undefined ? undefined : `"result":${result}`,
                  error === undefined ? undefined : `"error":${error}`,
                ];
                yield `{${members.filter((m) => m !== undefined).join(",")}}`;
              }
}

describe("the JSON-RPC envelope", () => {
  it("is judged by the hand check exactly as by the zod schemas, for every combination of its members", () => {
    let compared = 0;
    let accepted = 0;
    for (const text of frames()) {
      const value = JSON.parse(text) as Record<string, unknown>;
      const got = classify(value);
      // What classify refuses before any schema (a call and an answer at once; neither) is not the schemas' to say.
      if ("method" in value && ("result" in value || "error" in value)) continue;
      if (!("method" in value || "error" in value || "result" in value)) continue;
      const want = bySchemas(value);
      const message = got.kind === "invalid" ? got.error : got.message;
      const [seen, wanted] = [JSON.stringify(message), JSON.stringify(want)];
      if (seen !== wanted) expect({ text, message: seen }).toEqual({ text, message: wanted });
      compared++;
      if (got.kind !== "invalid") accepted++;
    }
    // Both sides of the check were exercised: many accepted, many refused.
    expect(compared).toBeGreaterThan(50_000);
    expect(accepted).toBeGreaterThan(1_000);
    expect(compared - accepted).toBeGreaterThan(10_000);
  }, 60_000);

  it("refuses the frames a person would get wrong, with the schema's words", () => {
    expect(classify(JSON.parse('{"jsonrpc":"2.0","id":1,"method":""}'))).toMatchObject({
      kind: "invalid",
      error: { id: 1, error: { code: ErrorCode.InvalidRequest } },
    });
    expect(classify(JSON.parse('{"jsonrpc":"2.0","id":1e999,"result":1}'))).toMatchObject({
      kind: "invalid",
      error: { id: null, error: { code: ErrorCode.InvalidRequest } },
    });
    expect(classify(JSON.parse('{"jsonrpc":"2.0","id":3,"error":{"code":1.5,"message":"m"}}'))).toMatchObject({
      kind: "invalid",
      error: { id: 3 },
    });
  });
});
