/**
 * The account's library: a person's documents (text or Markdown, with a title and an optional source), split into
 * chunks, embedded with the instance's embedding model (charged to the person) and searched by meaning. The /mcp
 * tools (which the web UI's library page calls too) come here.
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import type { Payer } from "../providers/metering";
import { HttpError } from "../respond";
import { byteLength } from "../providers/estimate";
import * as db from "../db/library";
import type { LibrarySearchResult } from "../protocol/http-api";
import { splitText } from "./chunks";
import { embed, embeddingModel } from "./embed";
import { libraryIndex } from "./library-index";
import { limitsOf, quotaReached } from "../limits/config";

/** The size of what goes in and out (docs/http-api.md, "/mcp"); how much an account may keep is its quotas (limits/config). */
export const LIBRARY_LIMITS = { textBytes: 512 * 1024, results: 20, listed: 1000 };

export const NewDocument = z.object({
  title: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
  text: z.string().check(
    z.refine((t) => t.trim() !== "", "the text is empty"),
    z.refine((t) => byteLength(t) <= LIBRARY_LIMITS.textBytes, "the text is over 512 KiB"),
  ),
  source: z.optional(z.string().check(z.trim(), z.maxLength(2000))),
});

export const Search = z.object({
  query: z.string().check(z.trim(), z.minLength(1), z.maxLength(2000)),
  limit: z._default(z.int().check(z.gte(1), z.lte(LIBRARY_LIMITS.results)), 5),
});

export const DocumentId = z.object({ id: z.string().check(z.minLength(1), z.maxLength(64)) });

const noSuchDocument = (id: string) => new HttpError(404, `no document ${id} in this library`);

/** 409 when an account holding `held` cannot take one more document of `adding` chunks; null when it can. */
function overQuota(env: Env, held: { documents: number; chunks: number }, adding: number) {
  const q = limitsOf(env).quotas;
  const instead = "delete some documents first";
  if (held.documents + 1 > q.library_documents)
    return quotaReached("library_documents", q.library_documents, "documents in its library", instead);
  if (held.chunks + adding > q.library_chunks)
    return quotaReached("library_chunks", q.library_chunks, "passages in its library", instead);
  return null;
}

export async function addDocument(
  env: Env,
  ctx: ExecutionContext,
  caller: Payer,
  input: z.output<typeof NewDocument>,
): Promise<db.DocumentInfo> {
  const chunks = splitText(input.text);
  // Checked before embedding (which the person pays for), and again in the statement that writes the document.
  const before = overQuota(env, await db.holdings(env.DB, caller.userId), chunks.length);
  if (before) throw before;
  const model = embeddingModel(env);
  const units = await embed(env, ctx, caller, model, chunks);
  const index = libraryIndex(env);
  const doc = {
    id: crypto.randomUUID(),
    userId: caller.userId,
    title: input.title,
    source: input.source || null,
    text: input.text,
    chunks: chunks.length,
    model: model.id,
    created_at: Date.now(),
  };
  const rows = chunks.map((text, i) => ({ text, vector: index.stored(units[i]!) }));
  const { library_documents: documents, library_chunks: chunkQuota } = limitsOf(env).quotas;
  if (!(await db.insertDocument(env.DB, doc, rows, { documents, chunks: chunkQuota }))) {
    throw (
      overQuota(env, await db.holdings(env.DB, caller.userId), chunks.length) ??
      new HttpError(409, "the library filled meanwhile")
    );
  }
  await index.added(caller.userId, doc.id, units);
  return { id: doc.id, title: doc.title, source: doc.source, chunks: doc.chunks, created_at: doc.created_at };
}

export async function searchLibrary(
  env: Env,
  ctx: ExecutionContext,
  caller: Payer,
  { query, limit }: z.output<typeof Search>,
): Promise<LibrarySearchResult[]> {
  const [unit] = await embed(env, ctx, caller, embeddingModel(env), [query]);
  const hits = await libraryIndex(env).search(caller.userId, unit!, limit);
  const chunks = await db.chunksAt(env.DB, caller.userId, hits);
  const found = new Map(chunks.map((c) => [`${c.document_id}:${c.seq}`, c]));
  return hits.flatMap((hit) => {
    const c = found.get(`${hit.documentId}:${hit.seq}`);
    if (!c) return []; // deleted meanwhile (or an external index not yet in step)
    const score = Math.round(hit.score * 1e4) / 1e4;
    return [{ document_id: c.document_id, title: c.title, source: c.source, chunk: c.seq, score, text: c.text }];
  });
}

export const listDocuments = (env: Env, userId: string) => db.listDocuments(env.DB, userId, LIBRARY_LIMITS.listed);

export async function getDocument(env: Env, userId: string, id: string): Promise<db.DocumentFull> {
  const doc = await db.getDocument(env.DB, userId, id);
  if (!doc) throw noSuchDocument(id);
  return doc;
}

export async function deleteDocument(env: Env, userId: string, id: string): Promise<void> {
  const chunks = await db.deleteDocument(env.DB, userId, id);
  if (chunks === null) throw noSuchDocument(id);
  await libraryIndex(env).removed(userId, id, chunks);
}
