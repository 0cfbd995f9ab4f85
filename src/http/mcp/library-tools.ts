/**
 * The account library's MCP tools. Each needs the `library` scope (a token without it is not shown them, and a
 * call is a tool error saying how to get it) and is the library service's own operation; `inputSchema` is each zod
 * schema's JSON Schema, written out so the Worker needs no schema converter (test/http/mcp.test.ts, "tool
 * definitions", keeps the two equal).
 */
import * as z from "zod/mini";
import type { Tool } from "./server";
import {
  addDocument,
  deleteDocument,
  DocumentId,
  getDocument,
  LIBRARY_LIMITS,
  listDocuments,
  NewDocument,
  Search,
  searchLibrary,
} from "../../library/library";

/** A tool of the library, typed by its own input schema. */
const tool = <S extends z.ZodMiniType>(t: Omit<Tool<S>, "scope">): Tool => ({ ...t, scope: "library" }) as Tool;

// Unknown arguments are dropped, not refused: no additionalProperties: false.
const object = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: "object",
  properties,
  ...(required.length > 0 && { required }),
});
const idSchema = object(
  { id: { type: "string", minLength: 1, maxLength: 64, description: "the document's id (library_list shows them)" } },
  ["id"],
);

export const LIBRARY_TOOLS: readonly Tool[] = [
  tool({
    name: "library_search",
    title: "Search the library",
    description:
      "Finds the passages of the person's documents nearest the query by meaning, best first: each with its " +
      "document's id, title and source, its place in the document (chunk), its score (cosine, up to 1) and text.",
    input: Search,
    inputSchema: object(
      {
        query: { type: "string", minLength: 1, maxLength: 2000, description: "what to look for, in plain words" },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: LIBRARY_LIMITS.results,
          default: 5,
          description: "how many passages",
        },
      },
      ["query"],
    ),
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (args, c) => ({ results: await searchLibrary(c.env, c.ctx, c.caller, args) }),
  }),
  tool({
    name: "library_add",
    title: "Add a document",
    description:
      "Stores a text or Markdown document (at most 512 KiB) in the person's library, split into passages and " +
      "indexed by meaning, and answers its id.",
    input: NewDocument,
    inputSchema: object(
      {
        title: { type: "string", minLength: 1, maxLength: 200 },
        text: { type: "string", description: "the document, as text or Markdown" },
        source: { type: "string", maxLength: 2000, description: "where it came from: a URL, a path" },
      },
      ["title", "text"],
    ),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    run: async (args, c) => ({ document: await addDocument(c.env, c.ctx, c.caller, args) }),
  }),
  tool({
    name: "library_list",
    title: "List the library",
    description: "Lists the person's documents, newest first: id, title, source, passages (chunks) and when added.",
    input: z.object({}),
    inputSchema: object({}),
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (_args, c) => ({ documents: await listDocuments(c.env, c.caller.userId) }),
  }),
  tool({
    name: "library_get",
    title: "Read a document",
    description: "A whole document of the person's library, with its text.",
    input: DocumentId,
    inputSchema: idSchema,
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async ({ id }, c) => ({ document: await getDocument(c.env, c.caller.userId, id) }),
  }),
  tool({
    name: "library_delete",
    title: "Delete a document",
    description: "Removes a document and its passages from the person's library.",
    input: DocumentId,
    inputSchema: idSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    run: async ({ id }, c) => {
      await deleteDocument(c.env, c.caller.userId, id);
      return { deleted: id };
    },
  }),
];
