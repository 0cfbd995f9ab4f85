/** One device: its chats, the chat open, its cards and a terminal on it. */
import { useEffect, useRef } from "preact/hooks";
import { deviceView } from "../views/device";

export function DevicePage({ deviceId, sessionId }: { deviceId: string; sessionId?: string }) {
  const root = useRef<HTMLDivElement>(null);
  useEffect(() => deviceView(root.current!, deviceId, sessionId ?? null), [deviceId]);
  return <div ref={root} class="pad" />;
}
