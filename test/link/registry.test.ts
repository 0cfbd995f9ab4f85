/**
 * "Who handles session/prompt?" is read, not searched for: the registry of the device's object is written out as a
 * table beside this test (registry.md), and the test fails when the features claim something the committed table
 * does not say. After a change to what a feature handles, run the test with `-u` and commit the table with it.
 */
import { describe, expect, it } from "vitest";
import { registry } from "../../src/link/device-link";
import type { LinkFeature } from "../../src/link/runtime/runtime";

type Field = Exclude<keyof LinkFeature, "name" | "after" | "migrations" | "fresh" | "onDemand">;

/** Each field a feature fills, with the heading and the column the table gives it. */
const SECTIONS: readonly [Field, string, string][] = [
  ["clientMethods", "Methods a client calls on the instance", "method"],
  ["beforeForward", "Client calls seen before they go to the device", "method"],
  ["cancels", "Cancels of relayed requests carried out by the instance", "method"],
  ["relayedAnswers", "Relayed answers observed on their way back", "method"],
  ["deviceRequests", "Requests from the device", "method"],
  ["deviceNotifications", "Notifications from the device", "method"],
  ["deviceAnswers", "Answers to the instance's own requests", "purpose"],
  ["clientAnswers", "Clients' answers to the instance's requests", "id prefix"],
  ["deadlines", "Deadlines", "kind"],
  ["d1Writes", "D1 writes owed through the queue", "kind"],
];

const HOOKS: readonly Field[] = [
  "onLinkUp",
  "onLinkDown",
  "onClientAttached",
  "onClientDetached",
  "onCardOpened",
  "onCardEnded",
  "status",
];

/** A Markdown table with its columns padded, as a formatter leaves it, so it reads as well in plain text. */
function markdownTable(head: readonly [string, string], rows: readonly (readonly [string, string])[]): string[] {
  const widths = [0, 1].map((i) => Math.max(3, ...[head, ...rows].map((row) => row[i]!.length)));
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)];
}

function table(features: readonly LinkFeature[]): string {
  const lines = [
    "# The link's registry: which feature handles what",
    "",
    "Written by test/link/registry.test.ts from the features of src/link/device-link.ts, in the order their hooks run.",
    "",
    `Features: ${features.map((f) => f.name).join(", ")}.`,
  ];
  for (const [field, heading, column] of SECTIONS) {
    const owners = new Map<string, string[]>();
    for (const feature of features) {
      for (const key of Object.keys(feature[field] ?? {})) owners.set(key, [...(owners.get(key) ?? []), feature.name]);
    }
    const rows = [...owners.keys()].sort().map((key) => [`\`${key}\``, owners.get(key)!.join(", ")] as const);
    lines.push("", `## ${heading} (\`${field}\`)`, "", ...markdownTable([column, "features"], rows));
  }
  const hooks = HOOKS.map(
    (hook) => [`\`${hook}\``, features.flatMap((f) => (f[hook] === undefined ? [] : [f.name])).join(", ")] as const,
  );
  lines.push("", "## Hooks", "", ...markdownTable(["hook", "features"], hooks));
  return `${lines.join("\n")}\n`;
}

describe("the link's registry", () => {
  it("handles what its committed table says", async () => {
    await expect(table(registry.features)).toMatchFileSnapshot("./registry.md");
  });
});
