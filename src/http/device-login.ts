/**
 * Device login, the OAuth 2.0 Device Authorization Grant (RFC 8628): the CLI asks for a code, a signed-in person
 * approves (or denies) it in the browser, the CLI polls and receives its device token, once.
 */
import * as z from "zod/mini";
import type { Env } from "../env";
import type { Handler } from "./handler";
import type { ApprovedDevice, WaitingLogin } from "../protocol/http-api";
import { readJson } from "./body";
import { readJsonOrForm } from "./form-body";
import { HttpError, json } from "../respond";
import { accountGone, personWriting } from "./guards";
import type { Scope } from "../protocol/http-api";
import { writeScopes } from "../db/scopes";
import { requireHeld } from "./scopes";
import type { Person } from "./auth";
import { findUser } from "../db/users";
import { clientAddress, countAttempt } from "./rate-limit";
import { BOUNDS, cut, displayName } from "../db/bounds";
import { limitsOf, quotaReached } from "../limits/config";
import { issueToken, newTokenId, parseToken, secretMatches } from "../crypto/tokens";
import { hashUserCode, newUserCode, normaliseUserCode } from "../crypto/user-codes";
import {
  approveDeviceCode,
  denyDeviceCode,
  findDeviceCode,
  findDeviceCodeByUserCode,
  insertDeviceCode,
  issueDeviceSecret,
  recordPoll,
  type DeviceCodeRow,
} from "../db/device-codes";

const EXPIRES_IN_S = 600;
const INTERVAL_S = 5;
/** A poll this much early still counts as on time: clocks and networks jitter. */
const POLL_SLACK_MS = 500;
const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
/** Attempts at drawing a user code that no live request holds (a collision is already rare). */
const USER_CODE_ATTEMPTS = 3;

const authorizeBody = z.object({
  name: z.optional(displayName(BOUNDS.name)),
  host: z.optional(displayName(BOUNDS.host)),
  platform: z.optional(displayName(BOUNDS.platform)),
  client_id: z.optional(z.string().check(z.maxLength(255))),
});

const tokenBody = z.object({
  grant_type: z.optional(z.string()),
  device_code: z.string().check(z.minLength(1, "is required"), z.maxLength(200)),
});

/** A person naming a waiting login; an approval also says whether the device may use the library (default: no). */
const userCodeBody = z.object({
  user_code: z.string().check(z.maxLength(32)),
  library: z._default(z.boolean(), false),
});

/** RFC 8628 §3.5 / RFC 6749 §5.2 error: 400 with `error`, `error_description` and this API's `detail`. */
const oauthError = (error: string, description: string) =>
  new HttpError(400, description, { error, error_description: description });
const codeUsed = () => oauthError("invalid_grant", "this device code was already used; start the login again");

export const authorize: Handler = async (request, env) => {
  await countAttempt(env, [["authorize_address", clientAddress(request)]], "too many device logins started from here");
  const body = await readJsonOrForm(request, authorizeBody);
  const deviceCode = await issueToken("lbc");
  const now = Date.now();
  for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
    const userCode = newUserCode();
    const inserted = await insertDeviceCode(env.DB, {
      id: deviceCode.id,
      secretHash: deviceCode.hash,
      userCodeHash: await hashUserCode(normaliseUserCode(userCode)!),
      name: body.name ?? null,
      host: body.host ?? null,
      platform: body.platform ?? null,
      intervalS: INTERVAL_S,
      now,
      expiresAt: now + EXPIRES_IN_S * 1000,
    });
    if (!inserted) continue;
    const verification = `${new URL(request.url).origin}/device`;
    return json({
      device_code: deviceCode.token,
      user_code: userCode,
      verification_uri: verification,
      verification_uri_complete: `${verification}?code=${userCode}`,
      expires_in: EXPIRES_IN_S,
      interval: INTERVAL_S,
    });
  }
  throw new HttpError(503, "could not draw a free user code; try again");
};

/**
 * The pending, unexpired request a person names by its user code. A code no device is waiting for counts as a
 * guess against the person's and the address's limits; any other answer takes the count back.
 */
async function pendingCode(request: Request, env: Env, person: Person): Promise<PendingCode> {
  const attempt = await countAttempt(
    env,
    [
      ["approval_person", person.userId],
      ["approval_address", clientAddress(request)],
    ],
    "too many codes that no device was waiting for",
  );
  try {
    const code = await findPendingCode(request, env);
    await attempt.succeeded(["approval_person"]);
    return code;
  } catch (err) {
    if (!(err instanceof HttpError && err.status === 404)) await attempt.succeeded();
    throw err;
  }
}

/** A pending code, with whether the person grants the device the library scope. */
type PendingCode = DeviceCodeRow & { library: boolean };

async function findPendingCode(request: Request, env: Env): Promise<PendingCode> {
  const { user_code, library } = await readJson(request, userCodeBody);
  const normalised = normaliseUserCode(user_code);
  const row = normalised && (await findDeviceCodeByUserCode(env.DB, await hashUserCode(normalised)));
  if (!row) throw new HttpError(404, `no device is waiting for the code ${user_code}; check the code the device shows`);
  if (row.expires_at <= Date.now())
    throw new HttpError(410, "this code has expired; start the login on the device again");
  if (row.status !== "pending")
    throw new HttpError(409, `this code was already ${row.status === "denied" ? "denied" : "approved"}`);
  return { ...row, library };
}

const codeGone = () => new HttpError(409, "this code was approved, denied or expired meanwhile");

/** The name a device approved from this code gets: what the CLI called it, else its host. */
const deviceName = (code: DeviceCodeRow) => cut(code.name ?? code.host ?? "device", BOUNDS.name);

/**
 * What a person must see before approving a code, and what the approval names: the device as its CLI described
 * itself, when it asked, and the account it joins — so a code planted by someone else cannot pass unnoticed.
 */
async function waitingLogin(env: Env, code: DeviceCodeRow, person: Person, now: number): Promise<WaitingLogin> {
  const account = await findUser(env.DB, person.userId);
  if (!account) throw accountGone();
  return {
    name: deviceName(code),
    host: code.host,
    platform: code.platform,
    requested_at: code.created_at,
    requested_seconds_ago: Math.max(0, Math.round((now - code.created_at) / 1000)),
    expires_at: code.expires_at,
    account: { id: account.id, email: account.email },
  };
}

/** The login waiting for a user code, shown before it is approved or denied. */
export const lookup: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const code = await pendingCode(request, env, person);
  return json(await waitingLogin(env, code, person, Date.now()));
};

export const approve: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const code = await pendingCode(request, env, person);
  const scopes: Scope[] = code.library ? ["library"] : [];
  requireHeld(person.scopes, scopes);
  const deviceId = newTokenId();
  const now = Date.now();
  const shown = await waitingLogin(env, code, person, now);
  const approval = { codeId: code.id, userId: person.userId, deviceId, name: shown.name, scopes, now };
  const { devices: quota } = limitsOf(env).quotas;
  const outcome = await approveDeviceCode(env.DB, approval, quota);
  if (outcome === "quota") throw quotaReached("devices", quota, "devices", "revoke one it no longer uses");
  if (outcome === "gone") throw codeGone();
  const approved: ApprovedDevice = { device_id: deviceId, ...shown, scopes };
  return json(approved);
};

export const deny: Handler = async (request, env) => {
  const person = await personWriting(request, env);
  const code = await pendingCode(request, env, person);
  if (!(await denyDeviceCode(env.DB, code.id, person.userId, Date.now()))) throw codeGone();
  return json({ denied: true });
};

/** The device's poll (RFC 8628 §3.4–3.5), JSON or form-encoded. */
export const token: Handler = async (request, env) => {
  let body: z.output<typeof tokenBody>;
  try {
    body = await readJsonOrForm(request, tokenBody);
  } catch (err) {
    throw err instanceof HttpError ? oauthError("invalid_request", err.detail) : err;
  }
  if (body.grant_type !== undefined && body.grant_type !== DEVICE_CODE_GRANT) {
    throw oauthError("unsupported_grant_type", `grant_type must be ${DEVICE_CODE_GRANT}`);
  }
  const parsed = parseToken(body.device_code);
  const code = parsed?.kind === "lbc" ? await findDeviceCode(env.DB, parsed.id) : null;
  if (!parsed || !code || !(await secretMatches(parsed.secret, code.secret_hash))) {
    throw oauthError("invalid_grant", "unknown device code; start the login again");
  }
  if (code.status === "issued") throw codeUsed();
  const now = Date.now();
  if (code.expires_at <= now) throw oauthError("expired_token", "the device code has expired; start the login again");
  if (code.status === "denied") throw oauthError("access_denied", "the login was denied");
  if (code.status === "pending") {
    if (!(await recordPoll(env.DB, code.id, now, POLL_SLACK_MS))) {
      throw oauthError("slow_down", `polled too fast; wait ${code.interval_s + 5} seconds between polls`);
    }
    throw oauthError("authorization_pending", "waiting for a person to approve the code");
  }
  const deviceId = code.device_id!;
  const device = await issueToken("lbd", deviceId);
  const outcome = await issueDeviceSecret(env.DB, code.id, deviceId, device.hash);
  if (outcome === "already-issued") throw codeUsed();
  if (outcome === "device-gone")
    throw oauthError("access_denied", "the device was removed before its token was issued");
  // RFC 6749 §5.1: the scopes granted, space-separated (empty: none), so the CLI knows whether to offer the library.
  const scope = writeScopes(outcome.issued);
  return json({ access_token: device.token, token_type: "Bearer", device_id: deviceId, scope });
};
