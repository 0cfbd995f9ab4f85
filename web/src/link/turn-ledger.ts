/**
 * The prompts this browser sent whose answers it has not seen, kept in localStorage per device, so that after a
 * reload (or a dropped socket) the page can find out what became of each (the spec's reattach rules) and, if the
 * device never got it, send it again under the same turn id. Attachments are kept only while the whole entry is
 * small; a larger prompt is kept as its text.
 */
import type * as acp from "@agentclientprotocol/sdk";
import type { AttachmentInfo } from "../../../src/protocol/lembas";

export interface KeptPrompt {
  sessionId: string;
  turnId: string;
  blocks: acp.ContentBlock[];
  /** As the transcript shows it. */
  text: string;
  attachments: AttachmentInfo[];
}

const KEEP_WHOLE_BELOW = 512 * 1024;
/** Old entries go first past this many (a page that never came back for them). */
const MAX_KEPT = 50;

export class TurnLedger {
  private readonly key: string;

  constructor(deviceId: string) {
    this.key = `lembas.turns.${deviceId}`;
  }

  all(): KeptPrompt[] {
    try {
      const value: unknown = JSON.parse(localStorage.getItem(this.key) ?? "[]");
      return Array.isArray(value) ? (value as KeptPrompt[]) : [];
    } catch {
      return [];
    }
  }

  add(prompt: KeptPrompt): void {
    let kept = prompt;
    if (JSON.stringify(prompt).length > KEEP_WHOLE_BELOW)
      kept = { ...prompt, blocks: prompt.blocks.filter((b) => b.type === "text") };
    this.write([...this.all().filter((p) => p.turnId !== prompt.turnId), kept].slice(-MAX_KEPT));
  }

  remove(turnId: string): void {
    const all = this.all();
    const rest = all.filter((p) => p.turnId !== turnId);
    if (rest.length !== all.length) this.write(rest);
  }

  private write(list: KeptPrompt[]): void {
    try {
      if (list.length === 0) localStorage.removeItem(this.key);
      else localStorage.setItem(this.key, JSON.stringify(list));
    } catch {
      // Storage full or off: a reload then cannot recover this prompt's answer, which the page says when it happens.
    }
  }
}
