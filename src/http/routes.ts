/** Every HTTP route of the instance, in one place. Each surface's handlers live in a module of their own. */
import { Router, type IRequest, type RouterType } from "itty-router";
import type { Env } from "../env";
import { HttpError } from "../respond";
import { errorResponse } from "./error-response";
import { withSecurityHeaders } from "./security-headers";
import { bodyLimit, KiB, MiB } from "./body";
import { FRAME_LIMITS } from "../link/runtime/frames";
import { discovery } from "./discovery";
import { instanceInfo } from "./instance";
import { answerCardOverHttp } from "./card-answer";
import { clientRpc, clientSocket, deviceLink } from "./link-routes";
import { getModel, listModels, listModelsForPerson } from "./v1/models";
import { chatCompletions } from "./v1/completions";
import { embeddings } from "./v1/embeddings";
import { speech, transcriptions } from "./v1/audio";
import { accountUsage, usage } from "./v1/usage";
import { getPersonalization, putPersonalization } from "./v1/personalization";
import {
  adminAssignPlan,
  adminDeletePlan,
  adminGetAccount,
  adminGrantCredits,
  adminListPlans,
  adminPutPlan,
  adminSetAdmin,
  adminSetPersonalization,
} from "./admin";
import { login, logout, me, setup, setupState } from "./accounts";
import { changePassword, endAllSignIns, endSignIn, listSignIns } from "./sign-ins";
import { createAccount, deleteAccount, listAccounts } from "./users";
import { createToken, deleteToken, listTokens } from "./api-tokens";
import { approve, authorize, deny, lookup, token } from "./device-login";
import { listOwnDevices, renameOwnDevice, revokeDevice } from "./devices";
import { deleteOwnChat, listOwnChats } from "./chats";
import { mcp, mcpNotAllowed } from "./mcp/route";
import { listPush, pushKey, subscribePush, unsubscribePush } from "./push";

export type AppRouter = RouterType<IRequest, [Env, ExecutionContext], Response>;

/** A path that is not valid percent-encoding names nothing: 400 before any route reads a parameter from it. */
function decodablePath(request: IRequest): undefined {
  try {
    decodeURIComponent(new URL(request.url).pathname);
  } catch {
    throw new HttpError(400, "the path is not valid percent-encoding");
  }
  return undefined;
}

export function buildRouter(): AppRouter {
  const router: AppRouter = Router<IRequest, [Env, ExecutionContext], Response>({
    before: [decodablePath],
    catch: errorResponse,
    finally: [withSecurityHeaders],
  });
  // Bodies: a route reads at most DEFAULT_BODY_BYTES (8 KiB, src/http/body.ts) unless it names its own cap with
  // bodyLimit(…) before its handler; past the cap it answers 413.
  router.get("/.well-known/lembas.json", discovery).get("/api/v1/instance", instanceInfo);
  // Accounts, API tokens, device login (RFC 8628) and devices. The fixed /api/devices/<word> routes come before
  // /api/devices/:id, which must not catch them.
  router
    .get("/api/auth/setup", setupState)
    .post("/api/auth/setup", setup)
    .post("/api/auth/login", login)
    .post("/api/auth/logout", logout)
    .get("/api/auth/me", me)
    .get("/api/auth/sessions", listSignIns)
    .delete("/api/auth/sessions", endAllSignIns)
    .delete("/api/auth/sessions/:id", endSignIn)
    .put("/api/auth/password", changePassword)
    .post("/api/users", createAccount)
    .get("/api/users", listAccounts)
    .delete("/api/users/:id", deleteAccount)
    .post("/api/tokens", createToken)
    .get("/api/tokens", listTokens)
    .delete("/api/tokens/:id", deleteToken)
    .post("/api/devices/authorize", authorize)
    .post("/api/devices/lookup", lookup)
    .post("/api/devices/approve", approve)
    .post("/api/devices/deny", deny)
    .post("/api/devices/token", token)
    .get("/api/devices", listOwnDevices)
    .patch("/api/devices/:id", renameOwnDevice)
    .delete("/api/devices/:id", revokeDevice)
    // What the CLI's API reports, for the signed-in person's web UI.
    .get("/api/usage", accountUsage)
    .get("/api/models", listModelsForPerson);
  // The CLI's HTTP API (a device token, or an API token where allowed), and the operator's plans and credits.
  router
    .get("/v1/models", listModels)
    .get("/v1/models/:id+", getModel)
    .post("/v1/chat/completions", bodyLimit(8 * MiB), chatCompletions)
    .post("/v1/embeddings", bodyLimit(1 * MiB), embeddings)
    // 25 MiB of audio and the form around it.
    .post("/v1/audio/transcriptions", bodyLimit(26 * MiB), transcriptions)
    .post("/v1/audio/speech", bodyLimit(64 * KiB), speech)
    .get("/v1/usage", usage)
    .get("/v1/me/personalization", getPersonalization)
    .put("/v1/me/personalization", bodyLimit(128 * KiB), putPersonalization)
    .get("/api/admin/plans", adminListPlans)
    .put("/api/admin/plans/:plan", adminPutPlan)
    .delete("/api/admin/plans/:plan", adminDeletePlan)
    .get("/api/admin/accounts/:account", adminGetAccount)
    .put("/api/admin/accounts/:account/plan", adminAssignPlan)
    .post("/api/admin/accounts/:account/credits", adminGrantCredits)
    .put("/api/admin/accounts/:account/admin", adminSetAdmin)
    .put("/api/admin/accounts/:account/personalization", adminSetPersonalization);
  // The device link and its owner's client interface (each into the device's Durable Object).
  router
    .get("/api/devices/link", deviceLink)
    .get("/api/devices/:deviceId/client", clientSocket)
    .post("/api/devices/:deviceId/rpc", bodyLimit(FRAME_LIMITS.maxFrameBytes), clientRpc)
    .post("/api/devices/:deviceId/cards/answer", bodyLimit(64 * KiB), answerCardOverHttp);
  // Chats: listed from D1; a delete goes through the device's object, which tells the device or keeps it pending.
  router.get("/api/chats", listOwnChats).delete("/api/chats/:deviceId/:sessionId", deleteOwnChat);
  // Web Push: the instance's VAPID key and a person's browser subscriptions.
  router
    .get("/api/push/key", pushKey)
    .post("/api/push/subscriptions", subscribePush)
    .get("/api/push/subscriptions", listPush)
    .delete("/api/push/subscriptions", unsubscribePush);
  // The account's library, as an MCP server: for any MCP client (a device or API token) and the web UI (a cookie).
  router
    .post("/mcp", bodyLimit(1 * MiB), mcp)
    .get("/mcp", mcpNotAllowed)
    .delete("/mcp", mcpNotAllowed);
  router.all("*", () => {
    throw new HttpError(404, "no such route");
  });
  return router;
}
