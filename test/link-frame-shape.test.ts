/**
 * A frame's top-level `method` and `id` are read from its text before it is parsed (frame-shape.ts): a refusal still
 * goes under the request's id, and a client frame's size limit depends on its method. Each member's value must read
 * as JSON itself would read it on its own — a string or a number, null for anything else, the last of repeated
 * members winning — whatever the frame around it, valid JSON or not.
 */
import { describe, expect, it } from "vitest";
import { frameShape } from "../src/link/frame-shape";

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
            const shape = frameShape(`${gap}{${members.join(",")}}`, 64);
            const wanted = expected(method);
            expect(shape.method, `method ${method}`).toBe(typeof wanted === "string" ? wanted : null);
            expect(shape.id, `id ${id}`).toBe(expected(id));
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
