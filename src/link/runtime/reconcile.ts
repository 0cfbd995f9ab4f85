/**
 * What the object's storage says against the sockets it really has. After a crash or a reset of the object (a
 * full disk, a locked storage, a deploy), its hibernatable sockets are gone but its rows still say a link is up and
 * clients wait — and webSocketClose never comes for them. So when the object starts, and in every sweep: a link
 * whose socket is not among ctx.getWebSockets() is ended ("lost": offline in D1, its cards settled as link_down
 * with every client told, its requests failed or kept as for any dropped link), and the outstanding requests of a
 * client whose socket (or HTTP /rpc call) is gone are dropped as if it had closed.
 */
import { endLink, writeHeldHandshake } from "./handshake";
import type { LinkRuntime } from "./runtime";
import { socketById } from "./sockets";

export async function reconcile(rt: LinkRuntime): Promise<void> {
  writeHeldHandshake(rt);
  const link = rt.link();
  if (link && link.state !== "down" && !socketById(rt.ctx, link.linkId)) await endLink(rt, link, "lost");
  for (const origin of rt.outbound.clientOrigins()) {
    const gone = origin.startsWith("http:") ? !rt.httpWaiters.has(origin) : !socketById(rt.ctx, origin);
    if (gone) await rt.emit("onClientDetached", origin);
  }
}
