import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, linkStub, type Peer } from "../helpers/link";
import { linkedWithClients } from "../helpers/linked";

const MODES = {
  currentModeId: "edit",
  availableModes: [
    { id: "plan", name: "Plan" },
    { id: "edit", name: "Edit" },
  ],
};

/** A client's request, relayed: the device answers it with `result`. */
async function relayed(link: Peer, client: Peer, id: string, method: string, params: unknown, result: unknown) {
  client.send({ jsonrpc: "2.0", id, method, params });
  const asked = await link.next();
  expect(asked).toMatchObject({ method });
  link.send({ jsonrpc: "2.0", id: asked.id, result });
  return client.answer(id);
}

const settingsOf = async (client: Peer, sessionId: string) =>
  (await client.call(`s-${crypto.randomUUID()}`, "_instance/session/settings", { sessionId })).result as {
    settings: Record<string, unknown> | null;
  };

describe("session settings", () => {
  it("remembers what session/new answered and the mode, configure and model changes since, for a socket that attaches later", async () => {
    const { user, device, link, clients } = await linkedWithClients(1);
    const [a] = clients as [Peer];
    expect(await settingsOf(a, "ses_1")).toEqual({ sessionId: "ses_1", settings: null });
    await relayed(
      link,
      a,
      "n",
      "session/new",
      { cwd: "/w", mcpServers: [] },
      {
        sessionId: "ses_1",
        modes: MODES,
        configOptions: [{ id: "effort", name: "Effort", type: "select", currentValue: "high", options: [] }],
        _meta: { lembas: { model: "openai/gpt-4o", mode: "edit", effort: "high" } },
      },
    );
    link.send({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "ses_1", update: { sessionUpdate: "current_mode_update", currentModeId: "plan" } },
    });
    await a.next();
    await relayed(
      link,
      a,
      "c",
      "_lembas/configure",
      { sessionId: "ses_1", effort: "low" },
      {
        model: "openai/gpt-4o",
        effort: "low",
      },
    );
    await evictDurableObject(linkStub(device.deviceId));
    // A second browser, after the object was evicted: what the session runs with now.
    const b = await attachClient(user, device.deviceId);
    expect((await settingsOf(b, "ses_1")).settings).toEqual({
      sessionId: "ses_1",
      modes: { ...MODES, currentModeId: "plan" },
      mode: "plan",
      model: "openai/gpt-4o",
      effort: "low",
      models: null,
      configOptions: [{ id: "effort", name: "Effort", type: "select", currentValue: "high", options: [] }],
      at: expect.any(Number),
    });
    // The device's model event says more.
    link.send({
      jsonrpc: "2.0",
      method: "_lembas/event",
      params: {
        sessionId: "ses_1",
        event: { type: "model", ref: "anthropic/claude", effort: "medium", connection: null, instance: false },
      },
    });
    await b.next();
    expect((await settingsOf(b, "ses_1")).settings).toMatchObject({ model: "anthropic/claude", effort: "medium" });
    expect((await a.call("bad", "_instance/session/settings", {})).error).toMatchObject({ code: -32602 });
  });
});
