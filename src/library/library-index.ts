/**
 * Where a library's vectors live and how they are searched. The D1 index keeps each vector in its chunk's row and
 * searches by reading a person's chunks page by page (brute-force cosine: fine to some tens of thousands of chunks a
 * person). With a Vectorize binding (LIBRARY_INDEX) the vectors live in Vectorize, one namespace a person, and a
 * search is one query there. Both answer hits as (document, seq, score); the chunks' text is in D1 either way.
 */
import type { Env } from "../env";
import { chunkVectors } from "../db/library";
import { cosine, decodeVector, encodeVector } from "./vectors";

export interface Hit {
  documentId: string;
  seq: number;
  score: number;
}

export interface LibraryIndex {
  /** What a chunk's row keeps of its vector: the D1 index the vector itself, an external index nothing. */
  stored(unit: Float32Array): string | null;
  /** After a document's rows are written: an external index takes its vectors. */
  added(userId: string, documentId: string, units: Float32Array[]): Promise<void>;
  /** The `limit` chunks nearest a unit vector, best first. */
  search(userId: string, unit: Float32Array, limit: number): Promise<Hit[]>;
  /** After a document's rows are deleted: an external index drops its vectors. */
  removed(userId: string, documentId: string, chunks: number): Promise<void>;
}

/** Rows a D1 search reads at a time: about 1,000 × (2 KiB of base64 at 1,536 dimensions) a query. */
const PAGE = 1000;

export function d1Index(db: D1Database): LibraryIndex {
  return {
    stored: encodeVector,
    added: async () => {},
    removed: async () => {},
    async search(userId, unit, limit) {
      const best: Hit[] = [];
      for (let after = 0; ; ) {
        const page = await chunkVectors(db, userId, after, PAGE);
        for (const row of page) {
          if (row.vector === null) continue;
          const q = decodeVector(row.vector);
          if (q.length !== unit.length) continue; // made by another embedding model
          const score = cosine(unit, q);
          if (best.length === limit && score <= best[limit - 1]!.score) continue;
          const at = best.findIndex((h) => h.score < score);
          best.splice(at < 0 ? best.length : at, 0, { documentId: row.document_id, seq: row.seq, score });
          if (best.length > limit) best.pop();
        }
        if (page.length < PAGE) return best;
        after = page.at(-1)!.rowid;
      }
    },
  };
}

const vectorId = (documentId: string, seq: number) => `${documentId}:${seq}`;

/** Vectorize: ids `<document>:<seq>`, a namespace a person. (Documented; the D1 index is the tested one.) */
export function vectorizeIndex(index: Vectorize): LibraryIndex {
  return {
    stored: () => null,
    async added(userId, documentId, units) {
      await index.upsert(units.map((values, seq) => ({ id: vectorId(documentId, seq), values, namespace: userId })));
    },
    async search(userId, unit, limit) {
      const { matches } = await index.query(unit, { topK: limit, namespace: userId });
      return matches.map((m) => {
        const at = m.id.lastIndexOf(":");
        return { documentId: m.id.slice(0, at), seq: Number(m.id.slice(at + 1)), score: m.score };
      });
    },
    async removed(_userId, documentId, chunks) {
      await index.deleteByIds(Array.from({ length: chunks }, (_, seq) => vectorId(documentId, seq)));
    },
  };
}

export const libraryIndex = (env: Env): LibraryIndex =>
  env.LIBRARY_INDEX ? vectorizeIndex(env.LIBRARY_INDEX) : d1Index(env.DB);
