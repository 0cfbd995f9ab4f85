/**
 * /library: the person's library — the documents their devices (with the library scope) and MCP clients search by
 * meaning. List them, add one by pasting it or from a text or Markdown file, delete one, and search.
 */
import { useEffect, useState } from "preact/hooks";
import { background } from "../app/background";
import { ago } from "../app/format";
import { messageOf } from "../app/http";
import { Confirm } from "../app/inline-forms";
import {
  addDocument,
  deleteDocument,
  type LibraryDocument,
  type LibrarySearchResult,
  listDocuments,
  searchLibrary,
} from "../app/library";

/** The library takes a document of at most this many bytes (README: /mcp). */
const MAX_TEXT_BYTES = 512 * 1024;

export function LibraryPage() {
  const [documents, setDocuments] = useState<LibraryDocument[] | null>(null);
  const [error, setError] = useState("");
  const load = async () => {
    try {
      setDocuments(await listDocuments());
      setError("");
    } catch (err) {
      setError(messageOf(err));
    }
  };
  useEffect(() => background(load()), []);

  return (
    <section class="pad page library">
      <h1>Library</h1>
      <p>
        Documents your devices and MCP clients can search by meaning (a device needs the library allowed when you
        approve it).
      </p>
      <p class="error" role="alert">
        {error}
      </p>
      <SearchForm />
      <AddForm added={() => background(load())} />
      <h2>Documents</h2>
      {documents?.length === 0 && <p>No document yet.</p>}
      <ul class="documents">
        {documents?.map((d) => (
          <DocumentRow key={d.id} document={d} deleted={() => background(load())} />
        ))}
      </ul>
    </section>
  );
}

function SearchForm() {
  const [results, setResults] = useState<LibrarySearchResult[] | null>(null);
  const [status, setStatus] = useState("");
  const search = async (query: string) => {
    setStatus("Searching…");
    try {
      const found = await searchLibrary(query);
      setResults(found);
      setStatus(found.length === 0 ? "Nothing found." : "");
    } catch (err) {
      setStatus(messageOf(err));
    }
  };
  return (
    <search class="card">
      <form
        class="search"
        onSubmit={(e) => {
          e.preventDefault();
          const query = String(new FormData(e.currentTarget).get("query") ?? "").trim();
          if (query) background(search(query));
        }}
      >
        <label>
          Search by meaning
          <input name="query" type="search" required maxLength={2000} />
        </label>
        <button type="submit">Search</button>
        <p role="status">{status}</p>
        {results && results.length > 0 && (
          <ol class="results" aria-label="Search results">
            {results.map((r) => (
              <li key={`${r.document_id}:${r.chunk}`}>
                <strong>{r.title}</strong> <span class="muted">{r.score.toFixed(2)}</span>
                <p>{r.text}</p>
              </li>
            ))}
          </ol>
        )}
      </form>
    </search>
  );
}

function AddForm({ added }: { added: () => void }) {
  const [title, setTitle] = useState("");
  const [text, setText] = useState("");
  const [status, setStatus] = useState<{ text: string; error: boolean } | null>(null);
  const [busy, setBusy] = useState(false);

  const readFile = async (file: File) => {
    if (file.size > MAX_TEXT_BYTES) {
      setStatus({ text: `${file.name} is over 512 KiB`, error: true });
      return;
    }
    setText(await file.text());
    if (!title) setTitle(file.name.replace(/\.(md|markdown|txt)$/i, ""));
  };
  const add = async (source: string) => {
    setBusy(true);
    setStatus({ text: "Adding…", error: false });
    try {
      const doc = await addDocument({ title, text, ...(source && { source }) });
      setStatus({ text: `Added ${doc.title} (${doc.chunks} passages).`, error: false });
      setTitle("");
      setText("");
      added();
    } catch (err) {
      setStatus({ text: messageOf(err), error: true });
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="card add-document"
      onSubmit={(e) => {
        e.preventDefault();
        const source = String(new FormData(e.currentTarget).get("source") ?? "").trim();
        background(add(source));
      }}
    >
      <h2>Add a document</h2>
      <label>
        Title
        <input name="title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} required maxLength={200} />
      </label>
      <label>
        Source (optional)
        <input name="source" maxLength={2000} placeholder="https://… or a path" />
      </label>
      <label>
        Text or Markdown
        <textarea name="text" rows={8} value={text} onInput={(e) => setText(e.currentTarget.value)} required />
      </label>
      <label>
        Or a text file
        <input
          name="file"
          type="file"
          accept=".txt,.md,.markdown,text/plain,text/markdown"
          onChange={(e) => {
            const file = e.currentTarget.files?.[0];
            if (file) background(readFile(file));
          }}
        />
      </label>
      <button type="submit" disabled={busy}>
        Add
      </button>
      <p role="status" class={status?.error ? "error" : ""}>
        {status?.text}
      </p>
    </form>
  );
}

function DocumentRow({ document: d, deleted }: { document: LibraryDocument; deleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState("");
  const remove = async () => {
    try {
      await deleteDocument(d.id);
      deleted();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <li class="card document">
      <h3>{d.title}</h3>
      <p class="muted">
        {d.source && <>{d.source} · </>}
        {d.chunks} passages · added {ago(d.created_at)}
      </p>
      {confirming ? (
        <Confirm
          legend={`Delete ${d.title}`}
          action="Delete"
          keep="Keep"
          onConfirm={() => background(remove())}
          onCancel={() => setConfirming(false)}
        >
          Delete {d.title} from the library?
        </Confirm>
      ) : (
        <button type="button" class="secondary" onClick={() => setConfirming(true)}>
          Delete
        </button>
      )}
      <p class="error" role="alert">
        {error}
      </p>
    </li>
  );
}
