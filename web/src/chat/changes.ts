/**
 * A chat's changes from its kept turns: every file the agent edited, its combined diff from the first edit's
 * `oldText` to the last edit's `newText`, newest first, with the turns that edited it.
 */
import type { KeptTurn } from "../../../src/protocol/instance";

export interface FileChange {
  path: string;
  /** The file before the first edit (null: the edit made it). */
  oldText: string | null;
  newText: string;
  /** The turns that edited it, oldest first. */
  turns: { turnId: string; prompt: string }[];
  /** When it was last edited (its turn's end). */
  at: number;
}

interface Diff {
  type: "diff";
  path: string;
  oldText?: string | null;
  newText: string;
}
const isDiff = (c: unknown): c is Diff =>
  typeof c === "object" && c !== null && (c as Diff).type === "diff" && typeof (c as Diff).path === "string";

/** `turns` oldest first. */
export function changesOf(turns: readonly KeptTurn[]): FileChange[] {
  const files = new Map<string, FileChange>();
  for (const turn of turns) {
    for (const item of turn.items) {
      if (item.type !== "tool") continue;
      for (const diff of (item.tool.content ?? []).filter(isDiff)) {
        const known = files.get(diff.path);
        const by = { turnId: turn.turnId, prompt: turn.prompt?.text ?? "" };
        if (!known) {
          files.set(diff.path, {
            path: diff.path,
            oldText: diff.oldText ?? null,
            newText: diff.newText,
            turns: [by],
            at: turn.endedAt,
          });
          continue;
        }
        known.newText = diff.newText;
        known.at = turn.endedAt;
        if (known.turns.at(-1)?.turnId !== turn.turnId) known.turns.push(by);
      }
    }
  }
  return [...files.values()].sort((a, b) => b.at - a.at);
}
