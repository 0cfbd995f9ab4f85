import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { servedModels } from "../../src/providers/config";
import { createUser, type TestUser } from "../helpers/fixtures";
import { assignPlan, call, putPlan, spend } from "../helpers/v1";
import { TEST_PROVIDERS } from "../shared/upstream";

interface OpenAiError {
  error: { message: string; type: string; code: string | null; param: string | null };
  detail: string;
}

let user: TestUser;
beforeAll(async () => {
  user = await createUser();
});

describe("errors on /v1 are OpenAI's, with the detail beside", () => {
  it("gives each failure its status, type, code and param, and the same sentence as message and detail", async () => {
    const admin = await createUser({ admin: true });
    const broke = await createUser();
    await putPlan(admin.apiAuth, "broke", { credits_per_month: 1 });
    await assignPlan(admin.apiAuth, broke.userId, "broke");
    await spend(broke.userId, { cost: 2 });
    const chat = (content: string) => ({ model: "fake/chat", messages: [{ role: "user", content }] });
    const cases: [string, string, string | null, unknown, number, string, string | null, string | null][] = [
      ["bad token", "/v1/models", "Bearer nope", undefined, 401, "authentication_error", "invalid_api_key", null],
      [
        "unknown model",
        "/v1/chat/completions",
        user.apiAuth,
        { ...chat("x"), model: "fake/nope" },
        404,
        "not_found_error",
        "model_not_found",
        "model",
      ],
      [
        "wrong kind",
        "/v1/embeddings",
        user.apiAuth,
        { model: "fake/chat", input: "x" },
        400,
        "invalid_request_error",
        "model_kind_mismatch",
        "model",
      ],
      [
        "bad field",
        "/v1/chat/completions",
        user.apiAuth,
        { ...chat("x"), stream: "yes" },
        400,
        "invalid_request_error",
        "invalid_request",
        "stream",
      ],
      ["not JSON", "/v1/chat/completions", user.apiAuth, "{", 400, "invalid_request_error", "invalid_json", null],
      [
        "no credits",
        "/v1/chat/completions",
        broke.apiAuth,
        chat("x"),
        402,
        "insufficient_quota",
        "insufficient_quota",
        null,
      ],
      [
        "provider failed",
        "/v1/chat/completions",
        user.apiAuth,
        chat("fail"),
        500,
        "server_error",
        "upstream_error",
        null,
      ],
      [
        "no key",
        "/v1/chat/completions",
        user.apiAuth,
        { ...chat("x"), model: "keyless/chat" },
        503,
        "server_error",
        "provider_not_configured",
        null,
      ],
      ["no route", "/v1/nothing-here", user.apiAuth, undefined, 404, "not_found_error", "not_found", null],
    ];
    for (const [what, path, auth, body, status, type, code, param] of cases) {
      const res = await call(path, auth, { body });
      expect(res.status, what).toBe(status);
      const answer = await res.json<OpenAiError>();
      expect(answer.error, what).toEqual({ message: answer.detail, type, code, param });
      expect(answer.detail, what).toBeTruthy();
    }
  });

  it("keeps the plain { detail } shape off /v1", async () => {
    const res = await call("/api/nothing-here", user.apiAuth);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "no such route" });
  });
});

describe("GET /v1/models/{id}", () => {
  it("retrieves a model whose id holds a slash, as it is or percent-encoded", async () => {
    for (const path of ["/v1/models/fake/chat", "/v1/models/fake%2Fchat"]) {
      const res = await call(path, user.apiAuth);
      expect(res.status, path).toBe(200);
      expect(await res.json()).toEqual({
        id: "fake/chat",
        object: "model",
        created: 0,
        owned_by: "fake",
        kind: "chat",
        provider: "fake",
      });
    }
    const missing = await call("/v1/models/fake%2Fnope", user.apiAuth);
    expect(missing.status).toBe(404);
    expect((await missing.json<OpenAiError>()).error.code).toBe("model_not_found");
    expect((await call("/v1/models/fake/chat", null)).status).toBe(401);
  });
});

describe("PROVIDERS as JSON text", () => {
  it("is read like the table, and text that is not JSON is named", () => {
    const models = servedModels({ ...env, PROVIDERS: JSON.stringify(TEST_PROVIDERS) });
    expect(models.get("fake/chat")).toMatchObject({ upstreamModel: "real-chat-2", priceIn: 1000 });
    expect(() => servedModels({ ...env, PROVIDERS: "{ fake: " })).toThrow(
      expect.objectContaining({ status: 500, detail: expect.stringMatching(/PROVIDERS.*text that is not JSON/) }),
    );
    expect(() =>
      servedModels({
        ...env,
        PROVIDERS: '{"fake":{"base_url":"https://x.test","models":{}},"Bad":{"base_url":"https://x.test","models":{}}}',
      }),
    ).toThrow(expect.objectContaining({ detail: expect.stringMatching(/provider names are lower-case/) }));
  });
});
