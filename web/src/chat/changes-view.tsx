/**
 * The Changes view of a chat: every file the agent edited (from the kept turns), newest first, each with its
 * combined diff and links to the turns that edited it.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { KeptTurn } from "../../../src/protocol/instance";
import { changesOf, type FileChange } from "./changes";
import { renderDiff } from "./diff";

function Diff({ change }: { change: FileChange }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    box.current?.replaceChildren(renderDiff(change.path, change.oldText, change.newText));
  }, [change]);
  return <div ref={box} />;
}

export function ChangesView({ turns, onTurn }: { turns: KeptTurn[] | null; onTurn: (turnId: string) => void }) {
  const [changes, setChanges] = useState<FileChange[]>([]);
  useEffect(() => setChanges(turns ? changesOf(turns) : []), [turns]);
  if (turns === null) return <p class="muted">Loading the changes…</p>;
  if (changes.length === 0) return <p class="muted">No file edited in this chat's kept turns.</p>;
  return (
    <ul class="changes" aria-label="Changed files">
      {changes.map((change) => (
        <li key={change.path} data-path={change.path}>
          <Diff change={change} />
          <p class="muted changes-turns">
            Edited in{" "}
            {change.turns.map((t, i) => (
              <>
                {i > 0 && ", "}
                <button type="button" class="link" onClick={() => onTurn(t.turnId)}>
                  {t.prompt.slice(0, 60) || "a turn"}
                </button>
              </>
            ))}
          </p>
        </li>
      ))}
    </ul>
  );
}
