/** Every HTTP route of the instance, in one place. Each surface's handlers live in a module of their own. */
import { Router, type IRequest, type RouterType } from "itty-router";
import type { Env } from "../env";
import { errorResponse, json } from "./respond";
import { discovery } from "./discovery";
import { instanceInfo } from "./instance";

export type Handler = (request: IRequest, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;
export type AppRouter = RouterType<IRequest, [Env, ExecutionContext], Response>;

export function buildRouter(): AppRouter {
  const router: AppRouter = Router<IRequest, [Env, ExecutionContext], Response>({
    catch: errorResponse,
  });
  router
    .get("/.well-known/lembas.json", discovery)
    .get("/api/v1/instance", instanceInfo);
  router.all("*", () => json({ detail: "no such route" }, 404));
  return router;
}
