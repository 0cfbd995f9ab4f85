/**
 * The account's library from the signed-in browser: the instance's MCP server (/mcp) spoken as its current revision
 * (2026-07-28) — every request self-described, no handshake — with the session cookie. One call a tool.
 */
import type { LibraryDocument, LibraryDocumentText, LibrarySearchResult } from "../../../src/protocol/http-api";
import { ApiError } from "./http";

export type { LibraryDocument, LibrarySearchResult };

const VERSION = "2026-07-28";
const META = "io.modelcontextprotocol/";
let nextId = 1;

interface Answer<T> {
  result?: { structuredContent?: T; isError?: boolean; content?: { text?: string }[] };
  error?: { message: string };
  detail?: string;
}

async function callTool<T>(name: string, args: Record<string, unknown>): Promise<T> {
  const res = await fetch("/mcp", {
    method: "POST",
    credentials: "same-origin",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": VERSION,
      "mcp-method": "tools/call",
      "mcp-name": name,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: nextId++,
      method: "tools/call",
      params: {
        name,
        arguments: args,
        _meta: {
          [`${META}protocolVersion`]: VERSION,
          [`${META}clientCapabilities`]: {},
          [`${META}clientInfo`]: { name: "lembas-edge web", version: "1" },
        },
      },
    }),
  });
  const answer = (await res.json().catch(() => ({}))) as Answer<T>;
  const failure =
    answer.detail ?? answer.error?.message ?? (answer.result?.isError ? answer.result.content?.[0]?.text : undefined);
  if (failure !== undefined || !res.ok || !answer.result?.structuredContent)
    throw new ApiError(res.status, failure ?? `${res.status} ${res.statusText}`);
  return answer.result.structuredContent;
}

export const listDocuments = async () =>
  (await callTool<{ documents: LibraryDocument[] }>("library_list", {})).documents;
export const addDocument = async (doc: { title: string; text: string; source?: string }) =>
  (await callTool<{ document: LibraryDocument }>("library_add", doc)).document;
export const getDocument = async (id: string) =>
  (await callTool<{ document: LibraryDocumentText }>("library_get", { id })).document;
export const deleteDocument = (id: string) => callTool<{ deleted: string }>("library_delete", { id });
export const searchLibrary = async (query: string, limit = 5) =>
  (await callTool<{ results: LibrarySearchResult[] }>("library_search", { query, limit })).results;
