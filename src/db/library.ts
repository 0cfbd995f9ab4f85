/** The account's library in D1 (tables `library_documents`, `library_chunks`). */
import type { LibraryDocument as DocumentInfo, LibraryDocumentText as DocumentFull } from "../protocol/http-api";
import { prepared } from "./prepared";

export type { DocumentFull, DocumentInfo };

/** One chunk of a search page: where it is, and its vector as the D1 index keeps it. */
export interface ChunkVectorRow {
  rowid: number;
  document_id: string;
  seq: number;
  vector: string | null;
}

/** A chunk found by a search, with its document. */
export interface ChunkHit {
  document_id: string;
  seq: number;
  text: string;
  title: string;
  source: string | null;
}

const INFO = "id,title,source,chunks,created_at";

export async function listDocuments(db: D1Database, userId: string, limit: number): Promise<DocumentInfo[]> {
  const { results } = await prepared(
    db,
    `SELECT ${INFO} FROM library_documents WHERE user_id=? ORDER BY created_at DESC,id LIMIT ?`,
    userId,
    limit,
  ).all<DocumentInfo>();
  return results;
}

export function getDocument(db: D1Database, userId: string, id: string): Promise<DocumentFull | null> {
  return prepared(
    db,
    `SELECT ${INFO},text FROM library_documents WHERE id=? AND user_id=?`,
    id,
    userId,
  ).first<DocumentFull>();
}

/** What an account holds: its documents and chunks, counted for its quota. */
export async function holdings(db: D1Database, userId: string): Promise<{ documents: number; chunks: number }> {
  const row = await prepared(
    db,
    "SELECT COUNT(*) documents,COALESCE(SUM(chunks),0) chunks FROM library_documents WHERE user_id=?",
    userId,
  ).first<{ documents: number; chunks: number }>();
  return row ?? { documents: 0, chunks: 0 };
}

/**
 * A document and its chunks (with their stored vectors, or null ones), in one transaction, if the account stays
 * within `quota` (documents, chunks) with them — checked in the statement that adds the document, so two adds at
 * once cannot pass it together. False when it would not.
 */
export async function insertDocument(
  db: D1Database,
  doc: DocumentFull & { userId: string; model: string },
  chunks: { text: string; vector: string | null }[],
  quota: { documents: number; chunks: number },
): Promise<boolean> {
  const [added] = await db.batch([
    prepared(
      db,
      "INSERT INTO library_documents (id,user_id,title,source,text,chunks,model,created_at) " +
        "SELECT ?1,?2,?3,?4,?5,?6,?7,?8 WHERE (SELECT COUNT(*) FROM library_documents WHERE user_id=?2)<?9 " +
        "AND (SELECT COALESCE(SUM(chunks),0) FROM library_documents WHERE user_id=?2) + ?6<=?10",
      doc.id,
      doc.userId,
      doc.title,
      doc.source,
      doc.text,
      chunks.length,
      doc.model,
      doc.created_at,
      quota.documents,
      quota.chunks,
    ),
    ...chunks.map((c, seq) =>
      prepared(
        db,
        "INSERT INTO library_chunks (document_id,seq,user_id,text,vector) " +
          "SELECT ?,?,?,?,? WHERE EXISTS (SELECT 1 FROM library_documents WHERE id=?1)",
        doc.id,
        seq,
        doc.userId,
        c.text,
        c.vector,
      ),
    ),
  ]);
  return added!.meta.changes > 0;
}

/** Deletes a document and its chunks; its chunk count, or null when the person has no such document. */
export async function deleteDocument(db: D1Database, userId: string, id: string): Promise<number | null> {
  const row = await prepared(
    db,
    "DELETE FROM library_documents WHERE id=? AND user_id=? RETURNING chunks",
    id,
    userId,
  ).first<{ chunks: number }>();
  return row?.chunks ?? null;
}

/** A page of a person's chunk vectors, in rowid order after `after`. */
export async function chunkVectors(
  db: D1Database,
  userId: string,
  after: number,
  limit: number,
): Promise<ChunkVectorRow[]> {
  const { results } = await prepared(
    db,
    "SELECT rowid,document_id,seq,vector FROM library_chunks WHERE user_id=? AND rowid>? ORDER BY rowid LIMIT ?",
    userId,
    after,
    limit,
  ).all<ChunkVectorRow>();
  return results;
}

/** A person's chunks by document and seq (a search's hits), with their documents. */
export async function chunksAt(
  db: D1Database,
  userId: string,
  keys: readonly { documentId: string; seq: number }[],
): Promise<ChunkHit[]> {
  if (keys.length === 0) return [];
  const { results } = await prepared(
    db,
    "SELECT c.document_id,c.seq,c.text,d.title,d.source FROM library_chunks c JOIN library_documents d " +
      `ON d.id=c.document_id WHERE c.user_id=? AND (c.document_id,c.seq) IN (VALUES ${keys.map(() => "(?,?)").join()})`,
    userId,
    ...keys.flatMap((k) => [k.documentId, k.seq]),
  ).all<ChunkHit>();
  return results;
}
