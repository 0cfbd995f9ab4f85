/**
 * POST /api/devices/:deviceId/cards/answer — a card answered over HTTP, as a notification's action does it without
 * opening a page: `{ sessionId, toolCallId, ...answer }`, the answer in the shape a client socket sends (`outcome`
 * and, for an approval, optional `_meta`). The same rule as on the socket: the first answer that fits goes to the
 * device, and every socket is told the card ended.
 *
 *   200 { answered: true }   used
 *   400 { detail }           not an answer this card takes (the sentence says why)
 *   404 { detail }           no such card (or device)
 *   409 { detail, reason }   the card already ended: answered, timed_out, settled, link_down, withdrawn or refused
 *   429 { detail }           the credential's budget, shared with /rpc, is spent (Retry-After says when to try)
 */
import * as z from "zod/mini";
import { deviceLinkOf } from "../link/device-link";
import { ErrorCode } from "../protocol/jsonrpc";
import { readJson } from "./body";
import { ownersDeviceWithinBudget } from "./link-routes";
import { HttpError, json } from "../respond";
import type { Handler } from "./handler";

const Id = (what: string) =>
  z.string().check(z.minLength(1, `${what} is required`), z.maxLength(512, `${what} is longer than 512 characters`));
const answerBody = z.looseObject({ sessionId: Id("sessionId"), toolCallId: Id("toolCallId") });

export const answerCardOverHttp: Handler = async (request, env) => {
  const { deviceId } = await ownersDeviceWithinBudget(request, env);
  const { sessionId, toolCallId, ...answer } = await readJson(request, answerBody);
  const refusal = await deviceLinkOf(env, deviceId).answerCard({ sessionId, toolCallId }, answer);
  if (refusal === null) return json({ answered: true });
  if (refusal.reason !== null) throw new HttpError(409, refusal.message, { reason: refusal.reason });
  if (refusal.code === ErrorCode.InvalidParams) throw new HttpError(400, refusal.message);
  if (refusal.code === ErrorCode.InvalidRequest) throw new HttpError(404, refusal.message);
  throw new HttpError(503, refusal.message);
};
