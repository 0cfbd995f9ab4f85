/**
 * A frame's top-level `method` and `id` are read from its text before it is parsed (frame-shape.ts): a refusal still
 * goes under the request's id, and a client frame's size limit depends on its method. Each member's value must read
 * as JSON itself would read it on its own — a string or a number, null for anything else, the last of repeated
 * members winning — whatever the frame around it, valid JSON or not. A relayed frame gets a new id where that last
 * id lies.
 */
import { describe, expect, it } from "vitest";
import { frameShape, idSpan, paramsStart } from "../../src/link/runtime/frame-shape";
import { JUDGED_UNPARSED_FROM, readFrame, withId } from "../../src/link/runtime/frames";

// Values as JSON text: plain and escaped strings, strings JSON forbids (raw control characters, an escape left
// open), numbers in every spelling JSON takes and some it refuses, and values that are neither.
const VALUES = [
  '"session/update"',
  '""',
  '"a b"',
  '"caf\u00e9 \ud83d\ude00"',
  '"\\u0041\\n"',
  '"say \\"hi\\""',
  '"back\\\\"',
  '"\\/"',
  '"\\x"',
  '"tab\there"',
  '"line\nbreak"',
  '"\u001f"',
  '"\ud800"',
  "0",
  "-0",
  "7",
  "-12.5",
  "1e3",
  "1.5E-2",
  "1e400",
  "01",
  "+1",
  "1.",
  ".5",
  "--1",
  "1e",
  "null",
  "true",
  "{}",
  "[]",
  '{"method":"inner"}',
];

function expected(value: string): string | number | null {
  try {
    const read: unknown = JSON.parse(value);
    return typeof read === "string" || typeof read === "number" ? read : null;
  } catch {
    return null;
  }
}

describe("a frame's method and id, read before it is parsed", () => {
  it("reads every value as JSON reads it on its own, in every order and spacing, the last repeated member winning", () => {
    let frames = 0;
    for (const method of VALUES) {
      for (const id of VALUES) {
        for (const spaced of [false, true]) {
          const gap = spaced ? " \n\t" : "";
          const member = (name: string, value: string) => `${gap}"${name}"${gap}:${gap}${value}${gap}`;
          const layouts = [
            [member("jsonrpc", '"2.0"'), member("id", id), member("method", method), member("params", "{}")],
            [member("method", method), member("params", '{"id":1,"method":"x"}'), member("id", id)],
            [member("id", '"first"'), member("method", '"first"'), member("id", id), member("method", method)],
          ];
          for (const members of layouts) {
            const text = `${gap}{${members.join(",")}}`;
            const shape = frameShape(text, 64);
            const wanted = expected(method);
            expect(shape.method, `method ${method}`).toBe(typeof wanted === "string" ? wanted : null);
            expect(shape.id, `id ${id}`).toBe(expected(id));
            // Where the id lies: its own text, the last repeated one's.
            const span = shape.idSpan;
            expect(span && text.slice(span.start, span.end), `id ${id}`).toBe(shape.id === null ? null : id);
            expect(shape.tooDeep).toBe(false);
            frames += 1;
          }
        }
      }
    }
    expect(frames).toBe(VALUES.length * VALUES.length * 2 * 3);
  });

  it("reads nothing from a string left open at the end of the text", () => {
    for (const open of ['{"method":"', '{"method":"abc', '{"method":"abc\\"', '{"id":"7\\\\\\"']) {
      const shape = frameShape(open, 64);
      expect(shape.method).toBeNull();
      expect(shape.id).toBeNull();
    }
  });
});

// Frames as a device or a client may send them, well formed or not: members repeated, escaped, reordered or extra;
// params that are not an object; nesting at and past the limit; text that is not JSON.
const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const FRAMES = [
  '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi \\"params\\": {"}}}}',
  '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}',
  '{"params":{"a":1},"jsonrpc":"2.0","method":"x"}',
  '{"jsonrpc":"2.0","method":"x","params":{"a":1},"params":{"b":2}}',
  '{"jsonrpc":"2.0","method":"x","params":{"a":1},"p\\u0061rams":{"b":2}}',
  '{"jsonrpc":"2.0","method":"x","p\\u0061rams":{"b":2}}',
  '{"jsonrpc":"2.0","method":"x","params":{"a":{"params":{}}},"id":"q"}',
  '{"jsonrpc":"2.0","method":"x","params":[1,2]}',
  '{"jsonrpc":"2.0","method":"x","params":{"a":1},"extra":true}',
  '{"jsonrpc":"2.0","m\\u0065thod":"x","id":"\\u0041"}',
  '{"jsonrpc":"2.0","id":7,"result":{"ok":true}}',
  '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}',
  `{"jsonrpc":"2.0","id":"deep","method":"x","params":{"v":${deep(62)}}}`,
  `{"jsonrpc":"2.0","id":"deep","method":"x","params":{"v":${deep(63)}}}`,
  `{"jsonrpc":"2.0","id":"deep","method":"x","params":{"v":${deep(5000)}}}`,
  `{"jsonrpc":"2.0","id":"deep","method":"x","params":{"v":${"[".repeat(100)}`,
  '{"jsonrpc":"2.0","method":"x","params":{"a":1}',
  "[1,2]",
  "7",
  "",
  '{"jsonrpc":"2.0","method":"x","params":{"__proto__":{"a":1}}}',
  '{"jsonrpc":"2.0","id":1,"result":{"id":2},"id":3}',
  '{"jsonrpc":"2.0","id":1,"result":{"id":2},"\\u0069d":"three"}',
  '{"result":{"text":"\\"id\\":4"},"jsonrpc":"2.0","id":"a\\"b"}',
  '{"jsonrpc":"2.0","id":[1],"result":null}',
];

describe("a short frame, parsed before it is judged", () => {
  it("gets the verdict a long frame judged from its text gets", () => {
    for (const from of ["device", "client"] as const) {
      for (const frame of FRAMES) {
        expect(frame.length).toBeLessThanOrEqual(JUDGED_UNPARSED_FROM);
        // Whitespace after the frame takes it past the length where frames are judged unparsed, and moves nothing.
        const long = readFrame(`${frame}${" ".repeat(JUDGED_UNPARSED_FROM)}`, from);
        const short = readFrame(frame, from);
        if (long.kind !== "refused" && long.verbatim !== null) long.verbatim = long.verbatim.trimEnd();
        expect(short, `${from}: ${frame.slice(0, 80)}`).toEqual(long);
      }
    }
  });

  it("puts a new id where the last top-level id lies, leaving the rest of the text as it came", () => {
    for (const frame of FRAMES) {
      const read = readFrame(frame, "device");
      if (read.kind === "refused" || read.verbatim === null || !("id" in read.message) || read.message.id === null)
        continue;
      const spliced = withId(frame, 'new "id"');
      expect(spliced, frame.slice(0, 80)).not.toBeNull();
      expect(JSON.parse(spliced!), frame.slice(0, 80)).toEqual({ ...JSON.parse(frame), id: 'new "id"' });
      expect(idSpan(frame), frame.slice(0, 80)).toEqual(frameShape(frame, Number.POSITIVE_INFINITY).idSpan);
    }
    // No string or number id: nothing to replace.
    expect(withId('{"jsonrpc":"2.0","id":[1],"result":null}', 2)).toBeNull();
    expect(withId('{"jsonrpc":"2.0","method":"x"}', 2)).toBeNull();
  });

  it("finds where the params open as a whole scan finds it, the last repeated params winning", () => {
    for (const frame of FRAMES.filter((f) => f.startsWith("{"))) {
      expect(paramsStart(frame), frame.slice(0, 80)).toBe(frameShape(frame, Number.POSITIVE_INFINITY).paramsAt);
    }
    // The last params wins, as in JSON.parse, however its name is spelled.
    for (const repeated of [
      '{"jsonrpc":"2.0","method":"x","params":{"a":1},"params":{"b":2}}',
      '{"jsonrpc":"2.0","method":"x","params":{"a":1},"p\\u0061rams":{"b":2}}',
    ])
      expect(paramsStart(repeated)).toBe(repeated.indexOf('{"b"'));
  });
});
