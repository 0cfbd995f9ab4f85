/** `lembas-edge login`: the OAuth 2.0 Device Authorization Grant (RFC 8628) against the instance. */
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import * as z from "zod/mini";
import { configDir, credentialsPath, saveCredential } from "./config-store.js";
import { PROTOCOL_MISMATCH, errorText, readDiscovery, speaksOurProtocol } from "./discovery.js";
import { Stop, say } from "./log.js";

const Authorization = z.object({
  device_code: z.string().check(z.minLength(1)),
  user_code: z.string().check(z.minLength(1)),
  verification_uri: z.string(),
  verification_uri_complete: z.optional(z.string()),
  expires_in: z.number().check(z.positive()),
  // RFC 8628 §3.2: five seconds when the server does not say.
  interval: z._default(z.number().check(z.nonnegative()), 5),
});

const Granted = z.object({
  access_token: z.string().check(z.minLength(1)),
  token_type: z.optional(z.string()),
  device_id: z.string().check(z.minLength(1)),
});

const Refused = z.object({
  error: z.enum(["authorization_pending", "slow_down", "expired_token", "access_denied", "invalid_grant"]),
  detail: z.optional(z.string()),
});

/** RFC 8628 §3.4: the grant type a device-code poll names. */
const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/** RFC 8628 §3.5: every slow_down adds five seconds to the polling interval, for good. */
const SLOW_DOWN_STEP_S = 5;

/** Logs in to `origin`; the device is named `name`, or after this machine's host. */
export async function login(origin: string, name: string | null = null): Promise<void> {
  const discovery = await readDiscovery(origin);
  if (!speaksOurProtocol(discovery)) throw new Stop(PROTOCOL_MISMATCH);
  const authorizeUrl = discovery.endpoints?.device_authorization ?? `${origin}/api/devices/authorize`;
  const tokenUrl = discovery.endpoints?.device_token ?? `${origin}/api/devices/token`;

  const host = hostname();
  const grant = Authorization.safeParse(
    await postJson(authorizeUrl, { name: name ?? host, host, platform: process.platform }, "ask for a device code"),
  );
  if (!grant.success) throw new Stop(`${authorizeUrl} did not answer with a device code`);
  const { device_code, user_code, verification_uri, verification_uri_complete, expires_in } = grant.data;

  say(`to link this machine, open ${verification_uri_complete ?? verification_uri}`);
  say(`and check that it shows the code ${user_code} (or enter it at ${verification_uri})`);
  say("waiting for the approval…");

  let intervalS = grant.data.interval;
  const deadline = Date.now() + expires_in * 1000;
  while (Date.now() < deadline) {
    await sleep(intervalS * 1000);
    const answer = await pollToken(tokenUrl, device_code);
    if (answer.kind === "granted") {
      const dir = configDir();
      await saveCredential(dir, { instance: origin, device_id: answer.device_id, token: answer.token });
      say(`logged in to ${origin} as device ${answer.device_id}; the token is in ${credentialsPath(dir)}`);
      return;
    }
    switch (answer.error) {
      case "authorization_pending":
        break;
      case "slow_down":
        intervalS += SLOW_DOWN_STEP_S;
        break;
      case "access_denied":
        throw new Stop("the login was denied at the instance; nothing was saved");
      case "expired_token":
        throw expired();
      case "invalid_grant":
        throw new Stop(
          `the instance no longer knows this login${answer.detail ? ` (${answer.detail})` : ""}; run lembas-edge login again`,
        );
    }
  }
  throw expired();
}

function expired(): Stop {
  return new Stop("the code expired before anyone approved it; run lembas-edge login again");
}

type PollAnswer =
  | { kind: "granted"; token: string; device_id: string }
  | { kind: "refused"; error: z.infer<typeof Refused>["error"]; detail?: string };

async function pollToken(url: string, deviceCode: string): Promise<PollAnswer> {
  const { status, body } = await request(
    url,
    { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode },
    "poll for the device token",
  );
  if (status === 200) {
    const granted = Granted.safeParse(body);
    if (!granted.success) throw new Stop(`${url} answered without a device token`);
    return { kind: "granted", token: granted.data.access_token, device_id: granted.data.device_id };
  }
  const refused = Refused.safeParse(body);
  if (!refused.success) throw new Stop(`${url} answered ${status}${detailOf(body)}`);
  return { kind: "refused", error: refused.data.error, detail: refused.data.detail };
}

async function postJson(url: string, payload: unknown, what: string): Promise<unknown> {
  const { status, body } = await request(url, payload, what);
  if (status < 200 || status > 299) throw new Stop(`could not ${what}: ${url} answered ${status}${detailOf(body)}`);
  return body;
}

async function request(url: string, payload: unknown, what: string): Promise<{ status: number; body: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(payload),
    });
  } catch (error) {
    throw new Stop(`could not ${what}: ${errorText(error)}`);
  }
  return { status: response.status, body: await response.json().catch(() => null) };
}

function detailOf(body: unknown): string {
  const detail = z.object({ detail: z.string() }).safeParse(body);
  return detail.success ? ` (${detail.data.detail})` : "";
}
