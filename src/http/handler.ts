/** What every route's handler is: the router (routes.ts) calls it; it never imports the router back. */
import type { IRequest } from "itty-router";
import type { Env } from "../env";

export type Handler = (request: IRequest, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;
