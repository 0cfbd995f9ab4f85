/**
 * The agent is initialised once per process. A redialled link's instance sends initialize again; it is
 * answered from the agent's first answer (with the new request's id) instead of initialising the agent
 * again, which would reset an agent that has live sessions — or be refused by one that initialises once.
 */
import type { AnyMessage, AnyResponse } from "@agentclientprotocol/sdk";
import type { AgentProcess } from "./agent-process.js";

type Answer = { result: unknown } | { error: { code: number; message: string; data?: unknown } };

/**
 * The bridge's own id for the agent's initialize: the answer is the bridge's to keep, and it stays valid even
 * when the link that asked has dropped before the agent answered.
 */
const INITIALIZE_ID = "lembas-edge/initialize";

export class InitializeOnce {
  private answer: Promise<Answer> | null = null;
  private settle: ((answer: Answer) => void) | null = null;

  constructor(private readonly agent: AgentProcess) {}

  /** The answer to the instance's initialize request `id`; the first one is the agent's own. */
  async answerFor(id: string | number, params: unknown): Promise<AnyResponse> {
    if (this.answer === null) {
      this.answer = new Promise<Answer>((resolve) => (this.settle = resolve));
      this.agent.send({ jsonrpc: "2.0", id: INITIALIZE_ID, method: "initialize", params });
    }
    const answer = await this.answer;
    return { jsonrpc: "2.0", id, ...answer };
  }

  /** Whether `message` is the agent's answer to the bridge's initialize; if so it is kept here, not relayed. */
  take(message: AnyMessage): boolean {
    if (!("id" in message) || message.id !== INITIALIZE_ID || "method" in message || this.settle === null) return false;
    const answer: Answer = "error" in message ? { error: message.error } : { result: message.result };
    this.settle(answer);
    this.settle = null;
    // A refusal is not kept: the next link's initialize asks the agent again.
    if ("error" in answer) this.answer = null;
    return true;
  }
}
