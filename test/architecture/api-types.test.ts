/**
 * One type for one shape: the web UI imports the API's types (type-only, from src/protocol) rather than restating
 * them. Read with the TypeScript parser: every object shape the API declares (interfaces, type literals, zod object
 * schemas) against every named object type the web UI declares; a web type with the same members as an API shape,
 * or nearly (the kind of copy that drifts: one field added on one side), is a restatement. Unions of literals
 * (`"up" | "down"`, a set of method names) are read with the type checker, since the API often derives them (`keyof
 * typeof CARDS`, a zod enum, an `as const` list): a union the web UI writes with the same literals as one anywhere
 * in the API's types, or all but one, is a restatement too.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT, sources } from "./sources.ts";

interface Shape {
  where: string;
  members: ReadonlySet<string>;
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

/** A union's literals (each as JSON: "up", 3) if it is made of two or more string or number literals, null aside. */
function literalsOf(type: ts.Type): Set<string> | null {
  const parts = (type.isUnion() ? type.types : [type]).filter(
    (t) => !(t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined)),
  );
  if (parts.length < 2 || !parts.every((t) => t.isStringLiteral() || t.isNumberLiteral())) return null;
  return new Set(parts.map((t) => JSON.stringify(t.value)));
}

/** One checker over the API's modules and the web UI's, which imports them. */
function checkedProgram(files: readonly string[]): ts.Program {
  const config = ts.readConfigFile(path.join(ROOT, "tsconfig.web.json"), ts.sys.readFile).config;
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  return ts.createProgram(
    files.map((f) => path.join(ROOT, f)),
    options,
  );
}

const lineOf = (node: ts.Node) => {
  const file = node.getSourceFile();
  return `${path.relative(ROOT, file.fileName)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
};

/**
 * Every union of literals in the API's types: its type aliases, interfaces and constants (a zod schema by the type
 * it parses to), and each of their properties, items and members, at any depth.
 */
function apiUnions(program: ts.Program, files: readonly ts.SourceFile[]): Shape[] {
  const checker = program.getTypeChecker();
  const unions: Shape[] = [];
  const seen = new Set<ts.Type>();
  const walk = (type: ts.Type, where: string) => {
    if (seen.has(type)) return;
    seen.add(type);
    const literals = literalsOf(type);
    if (literals) {
      unions.push({ where, members: literals });
      return;
    }
    if (type.isUnionOrIntersection()) for (const t of type.types) walk(t, where);
    if (!(type.flags & ts.TypeFlags.Object) || type.getCallSignatures().length > 0) return;
    const zod = type.getProperty("_zod");
    if (zod) {
      const output = checker.getTypeOfSymbol(zod).getProperty("output");
      if (output) walk(checker.getTypeOfSymbol(output), where);
      return;
    }
    const items = checker.getIndexTypeOfType(type, ts.IndexKind.Number);
    if (items) walk(items, `${where}[]`);
    for (const property of type.getProperties()) walk(checker.getTypeOfSymbol(property), `${where}.${property.name}`);
  };
  for (const file of files)
    for (const statement of file.statements) {
      const declarations = ts.isVariableStatement(statement) ? statement.declarationList.declarations : [statement];
      for (const declaration of declarations)
        if (
          (ts.isTypeAliasDeclaration(declaration) ||
            ts.isInterfaceDeclaration(declaration) ||
            ts.isVariableDeclaration(declaration)) &&
          ts.isIdentifier(declaration.name)
        )
          walk(checker.getTypeAtLocation(declaration.name), `${lineOf(declaration)} ${declaration.name.text}`);
    }
  return unions;
}

/**
 * Every union of literals the web UI writes: in a type (an alias's or in place), or as an `as const` list, the way a
 * union is derived from values. A type taken from the API's (`PlanAnswer["mode"]`) writes none.
 */
function webUnions(program: ts.Program, file: ts.SourceFile): Shape[] {
  const checker = program.getTypeChecker();
  const unions: Shape[] = [];
  const visit = (node: ts.Node) => {
    let type: ts.Type | undefined;
    if (ts.isUnionTypeNode(node)) type = checker.getTypeFromTypeNode(node);
    else if (
      ts.isAsExpression(node) &&
      ts.isConstTypeReference(node.type) &&
      ts.isArrayLiteralExpression(node.expression)
    )
      type = checker.getIndexTypeOfType(checker.getTypeAtLocation(node), ts.IndexKind.Number);
    const literals = type && literalsOf(type);
    if (literals) unions.push({ where: lineOf(node), members: literals });
    ts.forEachChild(node, visit);
  };
  visit(file);
  return unions;
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

  it("has no web union of literals that restates an API one: the same literals, or nearly", async () => {
    const apiFiles = await sources("src/protocol");
    const webFiles = await sources("web/src");
    const program = checkedProgram([...apiFiles, ...webFiles]);
    const sourceOf = (file: string) => program.getSourceFile(path.join(ROOT, file))!;
    const api = apiUnions(program, apiFiles.map(sourceOf));
    const web = webFiles.map(sourceOf).flatMap((file) => webUnions(program, file));
    expect(api.length).toBeGreaterThan(20);
    expect(web.length).toBeGreaterThan(3);
    const restated = web.flatMap((w) =>
      api
        .filter((a) => likeness(w.members, a.members) >= 0.75)
        .map((a) => `${w.where} restates ${a.where}: ${[...a.members].join(" | ")}`),
    );
    expect(restated).toEqual([]);
  });
});
