/**
 * The chat models the instance serves (GET /api/models), read once per page load for the model pickers, and its
 * speech-to-text models, for voice input.
 */
import { signal } from "@preact/signals";
import { background } from "./background";
import { type Model, models } from "./http";

export const chatModels = signal<Model[]>([]);
export const sttModels = signal<Model[]>([]);
let asked = false;

export function loadChatModels(): void {
  if (asked) return;
  asked = true;
  background(
    models().then(
      (list) => {
        // Only chat models (or, from an older list, models without a kind) are ones an agent talks to.
        chatModels.value = list.data.filter((m) => m.kind === "chat");
        sttModels.value = list.data.filter((m) => m.kind === "stt");
      },
      () => {
        asked = false;
      },
    ),
  );
}
