/**
 * End to end: the runtime dies while a /v1 completion streams. The OpenAI SDK streams a slow completion from the
 * real Worker under `wrangler dev` (a lease of 4 s: HOLD_LEASE_SECONDS); after 17 of its 40 chunks the whole
 * process tree is killed (SIGKILL) and started again on the same state. The stream is then charged once — what it
 * had measured by its last checkpoint, no more than was streamed — and its hold no longer blocks the account.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../bridge/helpers/run-bridge.js";
import { firstPerson, personOnPlan } from "./helpers/accounts.js";
import { startInstance, type Instance } from "./helpers/instance.js";
import { SLOW_CHUNKS, startUpstream, type Upstream } from "./helpers/openai-upstream.js";

const LEASE_SECONDS = 4;
const KILL_AFTER = 17;
/** A credit an output token; the stream may write 40 of them, so it holds a little over 40 of the plan's 45. */
const CREDITS = 45;

let upstream: Upstream;
let instance: Instance;
let persistTo: string;
let vars: Record<string, string>;
let apiKey: string;
let client: OpenAI;
const connect = () => (client = new OpenAI({ apiKey, baseURL: `${instance.origin}/v1`, maxRetries: 0 }));

interface Usage {
  balance: number;
  month: { tokens_out: number; cost: number };
}
const usage = async () => (await client.get("/usage")) as Usage;

beforeAll(async () => {
  upstream = await startUpstream();
  persistTo = await tempDir("stream-crash-state");
  vars = {
    PROVIDERS: JSON.stringify({
      local: { base_url: upstream.baseUrl, models: { dear: { kind: "chat", price_in: 1000, price_out: 1_000_000 } } },
    }),
    PROVIDER_LOCAL_API_KEY: "sk-local-upstream",
    HOLD_LEASE_SECONDS: String(LEASE_SECONDS),
  };
  instance = await startInstance({ persistTo, vars });
  const owner = await firstPerson(instance.origin);
  apiKey = (await personOnPlan(instance.origin, owner, "streamer@example.org", { credits_per_month: CREDITS })).auth;
  connect();
});

afterAll(async () => {
  await instance?.stop();
  await upstream?.stop();
});

const ask = (max_tokens: number, content: string) =>
  client.chat.completions.create({ model: "local/dear", max_tokens, messages: [{ role: "user", content }] });

describe("a stream whose runtime is killed mid-way", () => {
  it("is charged once, from what it had measured, and its hold is freed within the lease", async () => {
    const stream = await client.chat.completions.create({
      model: "local/dear",
      max_tokens: SLOW_CHUNKS,
      stream: true,
      messages: [{ role: "user", content: "slow, please" }],
    });
    let received = 0;
    // While it streams, its hold leaves under 5 credits: a request that may cost 10 is refused.
    const refused = await ask(10, "x").catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 402 });
    const killed = (async () => {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) received++;
        if (received === KILL_AFTER) {
          await instance.kill();
          return Date.now();
        }
      }
      throw new Error("the stream ended before the kill");
    })();
    const killedAt = await killed;

    instance = await startInstance({ persistTo, vars });
    connect(); // the instance listens on new ports
    // A read of the account settles a lapsed hold; the runtime may start again within the lease, so the account is
    // read until the hold's lease has run out and it shows the charge.
    let after = await usage();
    while (after.month.cost === 0 && Date.now() - killedAt < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = await usage();
    }
    const settledWithin = Date.now() - killedAt;
    const charged = after.month.tokens_out;
    expect(charged).toBeGreaterThanOrEqual(1);
    expect(charged).toBeLessThanOrEqual(KILL_AFTER);
    // Its output at a credit a token, and its input's estimate (a few dozen tokens at 0.001).
    const input = after.month.cost - charged;
    expect(input).toBeGreaterThan(0);
    expect(input).toBeLessThan(0.1);
    expect(after.balance).toBe(CREDITS - after.month.cost);
    expect(settledWithin).toBeLessThan(120_000);

    // Its hold is gone: a request that needs nearly all the balance is served.
    const room = Math.floor(after.balance) - 1;
    const served = await ask(room, "x");
    expect(served.choices[0]!.message.content).toBe("Hello!");
    // Charged once: the dead stream's row is not written again, by this read or a later one.
    await new Promise((resolve) => setTimeout(resolve, LEASE_SECONDS * 1000));
    const later = await usage();
    expect(later.month.tokens_out).toBe(charged + 3);
    expect(later.balance).toBeCloseTo(after.balance - 3 - 0.012, 6);
  }, 180_000); // a SIGKILL and a start of wrangler dev inside the test, as crash.test.ts: the settling's own bound is 120 s
});
