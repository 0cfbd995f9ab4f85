/**
 * A plain ACP agent (no `_lembas`) on the ACP SDK's own `agent()`, speaking ACP on stdin/stdout behind the bridge.
 * It advertises loadSession and image prompts, keeps each session's history (replayed by session/load), and acts on
 * what a prompt says: "wait" runs until cancelled, "ask" asks for a permission and says the outcome, an image is
 * described, anything else echoed. What it sees — prompts (and whether another turn of that session still ran),
 * loads, cancels, ends — is appended as JSON lines to the file named by SDK_AGENT_LOG, for the test to read.
 *
 * Run with Node's own TypeScript support: `node test/e2e/helpers/sdk-agent.ts`.
 */
import { appendFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

/** One line of the agent's log. */
export type AgentEvent =
  | { event: "prompt"; sessionId: string; text: string; whileRunning: boolean }
  | { event: "load"; sessionId: string }
  | { event: "cancel"; sessionId: string }
  | { event: "end"; sessionId: string; text: string; stopReason: string }
  | { event: "permission"; sessionId: string; outcome: string };

interface Session {
  history: acp.SessionUpdate[];
  running: AbortController | null;
}

const LOG = process.env.SDK_AGENT_LOG;
const log = (entry: AgentEvent) => {
  if (LOG) appendFileSync(LOG, `${JSON.stringify(entry)}\n`);
};

const sessions = new Map<string, Session>();
let made = 0;

const sessionOf = (sessionId: string): Session => {
  const session = sessions.get(sessionId);
  if (!session) throw acp.RequestError.sessionNotFound(sessionId);
  return session;
};

/** Waits until the turn is cancelled. */
const cancelled = (turn: AbortController) =>
  new Promise<void>((resolve) => turn.signal.addEventListener("abort", () => resolve(), { once: true }));

acp
  .agent({ name: "sdk-e2e-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: false },
    },
    agentInfo: { name: "sdk-e2e-agent", version: "1.0.0" },
    authMethods: [],
  }))
  .onRequest("session/new", () => {
    const sessionId = `sdk-${++made}`;
    sessions.set(sessionId, { history: [], running: null });
    return { sessionId };
  })
  .onRequest("session/load", async ({ params, client }) => {
    log({ event: "load", sessionId: params.sessionId });
    for (const update of sessionOf(params.sessionId).history) {
      await client.notify("session/update", { sessionId: params.sessionId, update });
    }
    return {};
  })
  .onNotification("session/cancel", ({ params }) => {
    log({ event: "cancel", sessionId: params.sessionId });
    sessions.get(params.sessionId)?.running?.abort();
  })
  .onRequest("session/prompt", async ({ params, client, signal }) => {
    const { sessionId } = params;
    const session = sessionOf(sessionId);
    const text = params.prompt.flatMap((block) => (block.type === "text" ? [block.text] : [])).join(" ");
    log({ event: "prompt", sessionId, text, whileRunning: session.running !== null });
    session.history.push({ sessionUpdate: "user_message_chunk", content: { type: "text", text } });
    const turn = new AbortController();
    session.running = turn;
    signal.addEventListener("abort", () => turn.abort(), { once: true });
    const say = async (said: string) => {
      const update: acp.SessionUpdate = { sessionUpdate: "agent_message_chunk", content: { type: "text", text: said } };
      session.history.push(update);
      await client.notify("session/update", { sessionId, update });
    };
    let stopReason: acp.StopReason = "end_turn";
    try {
      const image = params.prompt.find((block) => block.type === "image");
      if (text === "wait") {
        await say("waiting");
        await cancelled(turn);
        stopReason = "cancelled";
      } else if (text === "ask") {
        await say("asking");
        const answer = await client.request("session/request_permission", {
          sessionId,
          toolCall: { toolCallId: "call_1", title: "Touch a file", kind: "edit", status: "pending" },
          options: [
            { optionId: "allow", name: "Allow", kind: "allow_once" },
            { optionId: "deny", name: "Deny", kind: "reject_once" },
          ],
        });
        const outcome = answer.outcome.outcome === "selected" ? answer.outcome.optionId : answer.outcome.outcome;
        log({ event: "permission", sessionId, outcome });
        await say(`permission: ${outcome}`);
      } else if (image?.type === "image") {
        await say(`saw an image: ${image.mimeType}, ${Buffer.from(image.data, "base64").length} bytes`);
      } else {
        await say(`echo: ${text}`);
      }
      return { stopReason };
    } finally {
      session.running = null;
      log({ event: "end", sessionId, text, stopReason });
    }
  })
  .connect(
    acp.ndJsonStream(
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
      Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    ),
  );
