/**
 * What the link calls a client socket when it says who answered a card: `web` for a browser's sign-in, `an API
 * client` for a token's socket, or the name the client gave in its `initialize` (ACP's clientInfo: title, else name).
 * Kept in the socket's attachment, so it outlives hibernation.
 */
import * as z from "zod/mini";
import { attachmentOf, socketById, storeAttachment } from "./sockets";

/** The longest label kept (a client names itself). */
const LABEL_MAX = 64;

/** The label a socket opened with this credential (`<kind>_<id>`) starts with. */
export const labelOfCredential = (credential: string | undefined): string =>
  credential?.startsWith("lbs_") ? "web" : "an API client";

const ClientInfo = z.looseObject({
  clientInfo: z.looseObject({ name: z.optional(z.string()), title: z.optional(z.nullable(z.string())) }),
});

/** A client's initialize names it: its label becomes that name. */
export function nameClient(ctx: DurableObjectState, sid: string, initializeParams: unknown): void {
  const info = ClientInfo.safeParse(initializeParams);
  const name = info.success ? (info.data.clientInfo.title || info.data.clientInfo.name || "").trim() : "";
  const ws = name ? socketById(ctx, sid) : null;
  const attachment = ws ? attachmentOf(ws) : null;
  if (ws && attachment) storeAttachment(ws, { ...attachment, label: name.slice(0, LABEL_MAX) });
}

/** Who a client is, in words: its label, or for an HTTP caller (a notification's action) `a notification`. */
export function clientLabel(ctx: DurableObjectState, sid: string | null): string {
  if (sid === null) return "a notification";
  const ws = socketById(ctx, sid);
  return (ws && attachmentOf(ws)?.label) || (sid.startsWith("http:") ? "an HTTP client" : "a client");
}
