/**
 * The upstream providers the operator configured: `[vars.PROVIDERS.<name>]` in wrangler.toml, each an
 * OpenAI-compatible base URL and its models with a kind and prices. Keys are secrets, never config:
 * `PROVIDER_<NAME>_API_KEY`. Validated once per isolate, at first use, so a typo is a clear error, not a crash.
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import { checkSetting, errorText } from "../protocol/issues";
import { HttpError } from "../respond";
import { MODEL_KINDS, type ModelKind } from "../protocol/http-api";

export { MODEL_KINDS, type ModelKind };

/** A price or a count the ledger multiplies: finite, not negative, at most a billion. */
const bounded = () => z.number().check(z.nonnegative(), z.lte(1e9));

const ModelConfig = z
  .object({
    kind: z.literal(MODEL_KINDS),
    /** The provider's own name for it, when the served name differs. */
    upstream: z.optional(z.string().check(z.minLength(1))),
    /** Credits per million input (prompt) tokens. */
    price_in: z.optional(bounded()),
    /** Credits per million output (completion) tokens. */
    price_out: z._default(bounded(), 0),
    /** Speech to text: credits per minute of audio (instead of, or besides, the token prices). */
    price_minute: z.optional(bounded()),
    /** Text to speech: credits per million characters of input. */
    price_chars: z.optional(bounded()),
    /**
     * Chat: the most input tokens one image can count at the provider (its largest size and detail). Without it the
     * model takes no images: their tokens are not in the request's bytes, so nothing else bounds what they cost.
     */
    max_image_tokens: z.optional(z.int().check(z.positive(), z.lte(1e7))),
    /** The most output tokens one request can produce: what a request that sets no max_tokens holds. */
    max_output: z._default(z.int().check(z.positive(), z.lte(1e7)), 4096),
    /**
     * Request fields forwarded beyond the instance's allow-list (`n` above 1, `service_tier`, `store`, …): each
     * can change what a request costs, so the operator names them per model.
     */
    forward: z._default(z.array(z.string().check(z.regex(/^[a-z_][a-z0-9_]*$/))).check(z.maxLength(50)), []),
  })
  .check(
    // A model without its price would be free by mistake: tts is priced by characters, stt by minute or token.
    z.refine(
      (m) =>
        (m.kind === "tts" ? m.price_chars : (m.price_in ?? (m.kind === "stt" ? m.price_minute : undefined))) !==
        undefined,
      {
        path: ["price_in"],
        message: "the model needs its price (price_in; price_minute for stt; price_chars for tts)",
      },
    ),
  );

const ProviderConfig = z.object({
  // What z.url({ protocol: /^https?$/ }) accepts and outputs (trimmed, tabs and line breaks gone, as the URL parser
  // drops them), with its message; its schema kind is needed nowhere else.
  base_url: z.string().check(
    z.trim(),
    z.refine((url) => /^https?:\/\//i.test(url) && URL.canParse(url), "Invalid URL"),
    z.overwrite((url) => url.replace(/[\t\n\r]/g, "")),
  ),
  // Objects whose every member is checked (z.catchall): what z.record would check, without its schema in the bundle.
  models: z.catchall(z.object({}), ModelConfig),
});

// Names are checked here rather than as keys, whose own error would not say what a name may be.
const ProvidersConfig = z.catchall(z.object({}), ProviderConfig).check(
  z.superRefine((providers, ctx) => {
    for (const [name, provider] of Object.entries(providers)) {
      if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(name))
        ctx.addIssue({
          code: "custom",
          path: [name],
          message: "provider names are lower-case letters, digits, _ and -",
        });
      if (Object.hasOwn(provider.models, ""))
        ctx.addIssue({ code: "custom", path: [name, "models"], message: "a model's name is required" });
    }
  }),
);

export interface ServedModel {
  /** `<provider>/<model>`, as /v1/models lists it and clients ask for it. */
  id: string;
  provider: string;
  kind: ModelKind;
  upstreamModel: string;
  baseUrl: string;
  /** Credits per million input tokens. */
  priceIn: number;
  /** Credits per million output tokens. */
  priceOut: number;
  /** Credits per minute of audio (speech to text). */
  priceMinute: number;
  /** Credits per million characters (text to speech). */
  priceChars: number;
  maxOutput: number;
  /** The most input tokens one image counts, or null: the model takes no images. */
  maxImageTokens: number | null;
  /** Fields forwarded beyond the allow-list. */
  forward: ReadonlySet<string>;
}

let cached: { source: unknown; models: Map<string, ServedModel> } | undefined;

function parseProviders(source: unknown): Map<string, ServedModel> {
  const models = new Map<string, ServedModel>();
  for (const [provider, config] of Object.entries(checkSetting(ProvidersConfig, source))) {
    for (const [name, model] of Object.entries(config.models)) {
      const id = `${provider}/${name}`;
      models.set(id, {
        id,
        provider,
        kind: model.kind,
        upstreamModel: model.upstream ?? name,
        baseUrl: config.base_url.replace(/\/+$/, ""),
        priceIn: model.price_in ?? 0,
        priceOut: model.price_out,
        priceMinute: model.price_minute ?? 0,
        priceChars: model.price_chars ?? 0,
        maxOutput: model.max_output,
        maxImageTokens: model.max_image_tokens ?? null,
        forward: new Set(model.forward),
      });
    }
  }
  return models;
}

const MODEL_NOT_FOUND = { code: "model_not_found", param: "model" };

/** 404 for a model id this instance does not serve. */
export const noSuchModel = (id: string) =>
  new HttpError(404, `no model ${id} on this instance; GET /v1/models lists them`, {}, undefined, MODEL_NOT_FOUND);

/** Every served model, by id. A malformed PROVIDERS is a 500 whose detail names the mistake. */
export function servedModels(env: Env): Map<string, ServedModel> {
  if (cached && cached.source === env.PROVIDERS) return cached.models;
  try {
    cached = { source: env.PROVIDERS, models: parseProviders(env.PROVIDERS) };
    return cached.models;
  } catch (err) {
    const why = errorText(err);
    console.error("PROVIDERS is malformed:", why);
    throw new HttpError(
      500,
      `the instance's provider configuration (PROVIDERS in wrangler.toml) is malformed: ${why}`,
      {},
      undefined,
      { code: "configuration_error" },
    );
  }
}

/** The served model a request names, of the kind the endpoint serves: 404 when unknown, 400 when another kind. */
export function findModel(env: Env, id: string, kind: ModelKind): ServedModel {
  const model = servedModels(env).get(id);
  if (!model) throw noSuchModel(id);
  if (model.kind !== kind)
    throw new HttpError(400, `${id} is a model of kind ${model.kind}, not ${kind}`, {}, undefined, {
      code: "model_kind_mismatch",
      param: "model",
    });
  return model;
}

/** The secret holding a provider's API key: PROVIDER_<NAME>_API_KEY, the name upper-cased, - as _. */
export function keySecretName(provider: string): string {
  return `PROVIDER_${provider.toUpperCase().replaceAll("-", "_")}_API_KEY`;
}

/** The provider's API key; 503 naming the secret when the operator has not set it. */
export function providerKey(env: Env, provider: string): string {
  const name = keySecretName(provider);
  const key: unknown = Reflect.get(env, name);
  if (typeof key !== "string" || key === "") {
    throw new HttpError(
      503,
      `provider ${provider} has no API key on this instance; the operator sets the secret ${name}`,
      {},
      undefined,
      { code: "provider_not_configured" },
    );
  }
  return key;
}
