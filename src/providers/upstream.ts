/** Calls to an OpenAI-compatible provider, and its failures turned into the instance's `{ detail }` errors. */
import type { Env } from "../env";
import { providerKey, type ServedModel } from "./config";
import { HttpError } from "../respond";
import { errorText } from "../protocol/issues";

/** The provider's own words from an error body: OpenAI's `{ error: { message } }`, or the start of the text. */
async function upstreamReason(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === "object" && body !== null && "error" in body) {
      const error: unknown = body.error;
      if (typeof error === "string") return error;
      if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string")
        return error.message;
    }
  } catch {
    // not JSON: the text itself says why
  }
  return text.slice(0, 300) || response.statusText;
}

const UPSTREAM = { code: "upstream_error" };

/**
 * POSTs `body` (the upstream model name already in it: JSON text, or a multipart form) to `<base_url><path>` with
 * the provider's key. An answer that
 * is not 2xx becomes an HttpError with the provider's status and reason — except 401/403, which mean the instance's
 * key was refused and become 502, so a client never mistakes them for its own token being refused.
 */
export async function callUpstream(
  env: Env,
  model: ServedModel,
  path: string,
  body: string | FormData,
): Promise<Response> {
  const key = providerKey(env, model.provider);
  let response: Response;
  try {
    response = await fetch(`${model.baseUrl}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        // A form's multipart boundary is set by fetch itself.
        ...(typeof body === "string" && { "content-type": "application/json" }),
      },
      body,
    });
  } catch (err) {
    throw new HttpError(
      502,
      `provider ${model.provider} could not be reached: ${errorText(err)}`,
      {},
      undefined,
      UPSTREAM,
    );
  }
  if (response.ok) return response;
  const reason = await upstreamReason(response);
  const refusedKey = response.status === 401 || response.status === 403;
  throw new HttpError(
    refusedKey ? 502 : response.status,
    refusedKey
      ? `provider ${model.provider} refused the instance's API key (${response.status}): ${reason}`
      : `provider ${model.provider} answered ${response.status}: ${reason}`,
    {},
    undefined,
    UPSTREAM,
  );
}
