/**
 * The layout is the architecture: layers import downward only and no module reaches itself again through its
 * imports. Read from the sources with the TypeScript parser, type-only imports included — a type is a dependency
 * too, and a circle of types ties its modules together as firmly as one of values.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT, sources } from "./sources.ts";

/** The Worker's layers, lowest first: a module imports its own layer or one below it. */
const LAYERS: readonly (readonly string[])[] = [
  ["src/protocol/", "src/crypto/", "src/env.ts", "src/version.ts", "src/respond.ts"],
  ["src/db/"],
  ["src/limits/", "src/providers/", "src/library/", "src/push/", "src/link/"],
  ["src/http/", "src/sweep.ts"],
  ["src/index.ts"],
];

/** Inside the link, lowest first: the runtime knows no feature; only the object composes them. */
const LINK_ROOMS = ["src/link/runtime/", "src/link/features/", "src/link/device-link.ts"] as const;

/** What the browser UI and the bridge may take from the Worker's source: the protocol's types and tables. */
const SHARED_WITH_CLIENTS = "src/protocol/";

/** Every module of the three programs, with the modules of this repository it imports. */
async function importGraph(): Promise<Map<string, string[]>> {
  const files = (await Promise.all(["src", "web/src", "bin"].map(sources))).flat();
  const known = new Set(files);
  const resolve = (from: string, specifier: string): string | null => {
    if (!specifier.startsWith(".")) return null;
    const base = path.posix.join(path.posix.dirname(from), specifier).replace(/\.(js|ts|tsx)$/, "");
    return [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`].find((candidate) => known.has(candidate)) ?? null;
  };
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(await readFile(path.join(ROOT, file), "utf8"), true, true);
    const targets = importedFiles.map((i) => resolve(file, i.fileName)).filter((t): t is string => t !== null);
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The circles: strongly connected groups of more than one module (Tarjan), each as its modules. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const rankIn = (rooms: readonly (string | readonly string[])[], file: string): number =>
  rooms.findIndex((room) => (typeof room === "string" ? [room] : room).some((p) => file === p || file.startsWith(p)));

/** The imports that run from a lower room to a higher one, as "from → to". */
function upward(graph: ReadonlyMap<string, readonly string[]>, rooms: readonly (string | readonly string[])[]) {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const own = rankIn(rooms, from);
    if (own < 0) continue;
    for (const to of targets) if (rankIn(rooms, to) > own) found.push(`${from} → ${to}`);
  }
  return found;
}

describe("the import graph", async () => {
  const graph = await importGraph();

  it("has no circle, type-only imports included", () => {
    expect(circles(graph)).toEqual([]);
  });

  it("places every module of the Worker in a layer", () => {
    const unplaced = [...graph.keys()].filter((f) => f.startsWith("src/") && rankIn(LAYERS, f) < 0);
    expect(unplaced).toEqual([]);
  });

  it("runs down the Worker's layers only", () => {
    expect(upward(graph, LAYERS)).toEqual([]);
  });

  it("runs from the link's object to its features to its runtime, never back", () => {
    expect(upward(graph, LINK_ROOMS)).toEqual([]);
  });

  it("gives the browser UI and the bridge nothing of the Worker but the protocol", () => {
    const reaching = [...graph]
      .filter(([from]) => !from.startsWith("src/"))
      .flatMap(([from, targets]) => targets.filter((to) => to.startsWith("src/")).map((to) => `${from} → ${to}`))
      .filter((edge) => !edge.split(" → ")[1]!.startsWith(SHARED_WITH_CLIENTS));
    expect(reaching).toEqual([]);
  });

  it("finds a circle and an upward import where there are some", () => {
    const made = new Map([
      ["src/db/a.ts", ["src/http/b.ts"]],
      ["src/http/b.ts", ["src/db/a.ts"]],
    ]);
    expect(circles(made)).toEqual([["src/db/a.ts", "src/http/b.ts"]]);
    expect(upward(made, LAYERS)).toEqual(["src/db/a.ts → src/http/b.ts"]);
  });
});
