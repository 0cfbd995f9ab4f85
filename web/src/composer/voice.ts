/**
 * Voice input: the microphone recorded in the browser (MediaRecorder), the audio sent to the instance's
 * speech-to-text model (`POST /v1/audio/transcriptions`, with the sign-in cookie) and the text handed back to be
 * edited before sending.
 */
import { ApiError, messageOf } from "../app/http";

/** A recording under way; `stop()` ends it and resolves with its text. */
export interface Recording {
  stop(): Promise<string>;
  /** Ends it and throws the audio away. */
  cancel(): void;
}

export async function startRecording(model: string): Promise<Recording> {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  const recorder = new MediaRecorder(stream);
  const chunks: Blob[] = [];
  recorder.addEventListener("dataavailable", (e) => {
    if (e.data.size > 0) chunks.push(e.data);
  });
  const stopped = new Promise<void>((resolve) => recorder.addEventListener("stop", () => resolve()));
  const started = new Promise<void>((resolve) => recorder.addEventListener("start", () => resolve()));
  recorder.start();
  await started;
  const end = async () => {
    if (recorder.state !== "inactive") recorder.stop();
    await stopped;
    for (const track of stream.getTracks()) track.stop();
  };
  return {
    async stop() {
      await end();
      const type = recorder.mimeType || "audio/webm";
      return transcribe(new Blob(chunks, { type }), model);
    },
    cancel() {
      end().catch(() => {});
    },
  };
}

/** The file name's extension for a recording's type, which the instance reads the audio's length by. */
function extensionOf(type: string): string {
  if (type.includes("ogg")) return "ogg";
  if (type.includes("mp4")) return "m4a";
  return "webm";
}

async function transcribe(audio: Blob, model: string): Promise<string> {
  if (audio.size === 0) throw new Error("Nothing was recorded: check the microphone and try again.");
  const form = new FormData();
  form.set("file", audio, `voice.${extensionOf(audio.type)}`);
  form.set("model", model);
  const res = await fetch("/v1/audio/transcriptions", { method: "POST", credentials: "same-origin", body: form });
  const data = (await res.json().catch(() => null)) as { text?: unknown; error?: { message?: unknown } } | null;
  if (!res.ok) throw new ApiError(res.status, String(data?.error?.message ?? `${res.status} ${res.statusText}`));
  return typeof data?.text === "string" ? data.text : "";
}

/** Why the microphone could not be used, in words a person can act on. */
export function microphoneProblem(err: unknown): string {
  if (err instanceof DOMException && err.name === "NotAllowedError")
    return "The microphone is blocked for this site: allow it in the browser's site settings, then try again.";
  if (err instanceof DOMException && err.name === "NotFoundError")
    return "This device has no microphone to record with.";
  if (err instanceof ApiError) return `The transcription failed: ${err.message}`;
  return messageOf(err);
}
