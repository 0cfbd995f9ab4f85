/**
 * One type for one shape: the web UI imports the API's types (type-only, from src/protocol) rather than restating
 * them. Read with the TypeScript parser: every object shape the API declares (interfaces, type literals, zod object
 * schemas) against every named object type the web UI declares; a web type with the same members as an API shape,
 * or nearly (the kind of copy that drifts: one field added on one side), is a restatement.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

interface Shape {
  where: string;
  members: ReadonlySet<string>;
}

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

async function parse(file: string): Promise<ts.SourceFile> {
  return ts.createSourceFile(file, await readFile(path.join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
}

const nameOf = (name: ts.PropertyName | undefined) =>
  name && (ts.isIdentifier(name) || ts.isStringLiteral(name)) ? name.text : null;

function membersOf(members: ts.NodeArray<ts.TypeElement | ts.ObjectLiteralElementLike>): Set<string> {
  return new Set(members.map((m) => nameOf(m.name)).filter((n): n is string => n !== null));
}

const ZOD_OBJECTS = new Set(["object", "looseObject", "strictObject"]);

/** Every object shape declared in the API's modules, at any depth. */
function apiShapes(file: ts.SourceFile): Shape[] {
  const shapes: Shape[] = [];
  const where = (node: ts.Node) => `${file.fileName}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node) => {
    if (ts.isInterfaceDeclaration(node) || ts.isTypeLiteralNode(node))
      shapes.push({ where: where(node), members: membersOf(node.members) });
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      ZOD_OBJECTS.has(node.expression.name.text) &&
      node.arguments[0] !== undefined &&
      ts.isObjectLiteralExpression(node.arguments[0])
    )
      shapes.push({ where: where(node), members: membersOf(node.arguments[0].properties) });
    ts.forEachChild(node, visit);
  };
  visit(file);
  return shapes;
}

/** The web UI's named object types: interfaces, and type aliases of a type literal. */
function webShapes(file: ts.SourceFile): (Shape & { name: string })[] {
  const shapes: (Shape & { name: string })[] = [];
  const visit = (node: ts.Node) => {
    const where = () => `${file.fileName}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    if (ts.isInterfaceDeclaration(node))
      shapes.push({ name: node.name.text, where: where(), members: membersOf(node.members) });
    else if (ts.isTypeAliasDeclaration(node) && ts.isTypeLiteralNode(node.type))
      shapes.push({ name: node.name.text, where: where(), members: membersOf(node.type.members) });
    ts.forEachChild(node, visit);
  };
  visit(file);
  return shapes;
}

/** Shared members over all members of the two (1: the same names). */
function likeness(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  const shared = [...a].filter((m) => b.has(m)).length;
  return shared / new Set([...a, ...b]).size;
}

describe("the web UI and the API", () => {
  it("has no web type that restates an API shape: the same members, or all but one", async () => {
    const api = (await Promise.all((await sources("src/protocol")).map(parse))).flatMap(apiShapes);
    const web = (await Promise.all((await sources("web/src")).map(parse))).flatMap(webShapes);
    expect(api.length).toBeGreaterThan(50);
    expect(web.length).toBeGreaterThan(10);
    const restated = web.flatMap((w) =>
      w.members.size < 3
        ? []
        : api
            .filter((a) => likeness(w.members, a.members) >= 0.75)
            .map((a) => `${w.name} (${w.where}) restates ${a.where}: ${[...a.members].join(", ")}`),
    );
    expect(restated).toEqual([]);
  });
});
