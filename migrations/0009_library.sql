-- The account's library: a person's documents (text or Markdown), split into chunks that are searched by meaning.
-- Each chunk keeps its vector (the instance's embedding model's, normalised, quantised to 8 bits and base64'd: a
-- quarter of float32's size, and ranking is unchanged), and search reads a person's chunks in rowid pages; when the
-- Worker has a Vectorize index (LIBRARY_INDEX), the vectors live there instead and `vector` is NULL.

CREATE TABLE library_documents (
  id         TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  title      TEXT NOT NULL,
  source     TEXT,
  text       TEXT NOT NULL,
  chunks     INTEGER NOT NULL,
  model      TEXT NOT NULL,     -- the embedding model its vectors came from
  created_at INTEGER NOT NULL
);
CREATE INDEX library_documents_user ON library_documents(user_id, created_at);

CREATE TABLE library_chunks (
  document_id TEXT NOT NULL REFERENCES library_documents(id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  user_id     TEXT NOT NULL,
  text        TEXT NOT NULL,
  vector      TEXT,
  PRIMARY KEY (document_id, seq)
);
-- A person's chunks in rowid order: the pages a search reads.
CREATE INDEX library_chunks_user ON library_chunks(user_id);
