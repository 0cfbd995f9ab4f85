/** A client's answer to a drain probe (drain.ts) proves it read everything sent before the probe. */
import { acknowledge, PROBE_PREFIX } from "./drain";
import type { LinkFeature } from "./runtime";
import { socketById } from "./sockets";

export const drain: LinkFeature = {
  name: "drain",
  clientAnswers: {
    [PROBE_PREFIX]: (rt, peer, answer) => {
      const ws = socketById(rt.ctx, peer.sid);
      if (ws && answer.id !== null) acknowledge(ws, String(answer.id));
    },
  },
};
