/**
 * A device's chats, newest first: the title (from announce and title events; else where it works), whether it is
 * waiting for the person (a card open), working or idle, when it last changed, an unread mark, and a delete still
 * pending on the device with its reason, and its last message as the instance kept it. Live: announce, left, deleted
 * and title events change it in place.
 */
import { ago } from "../app/format";
import type { ChatInfo } from "../app/http";
import { chatPath } from "../app/paths";
import type { DeviceStore } from "../link/device-store";

/** What a chat is called: its title, else the folder it works in — never a raw session id. */
export function chatTitle(chat: ChatInfo | undefined, sessionId: string): string {
  if (chat?.title) return chat.title;
  const folder = chat?.cwd.split(/[\\/]/).filter(Boolean).at(-1);
  return folder ? `New chat in ${folder}` : `Chat ${sessionId.slice(-6)}`;
}

export function ChatList({
  store,
  deviceId,
  current,
}: {
  store: DeviceStore;
  deviceId: string;
  current: string | null;
}) {
  const kept = store.kept.summaries.value;
  const lastAt = (chat: ChatInfo) => Math.max(chat.updated_at, kept.get(chat.session_id)?.lastAt ?? 0);
  const chats = [...store.chats.list.value].sort((a, b) => lastAt(b) - lastAt(a));
  const busy = store.busy.value;
  const unread = store.chats.unread.value;
  const reasons = store.chats.deleteReasons.value;
  const waiting = new Map<string, number>();
  for (const card of store.cards.waiting.value)
    waiting.set(card.params.sessionId, (waiting.get(card.params.sessionId) ?? 0) + 1);
  if (chats.length === 0) return <p class="muted">No chats yet.</p>;
  return (
    <ul class="chat-list">
      {chats.map((chat) => {
        const id = chat.session_id;
        const cards = waiting.get(id) ?? 0;
        let state = <span class="badge">idle</span>;
        if (chat.pending_delete) state = <span class="badge pending">deleting</span>;
        else if (cards > 0) state = <span class="badge waiting">waiting for you</span>;
        else if (busy.has(id)) state = <span class="badge busy">working</span>;
        return (
          <li class={id === current ? "current" : ""} data-session-id={id}>
            <a href={chatPath(deviceId, id)} aria-current={id === current ? "page" : undefined}>
              <span class="chat-title">
                {unread.has(id) && (
                  <span class="unread-dot" aria-hidden="true">
                    ●
                  </span>
                )}
                {chatTitle(chat, id)}
                {unread.has(id) && <span class="visually-hidden"> (unread)</span>}
              </span>
              <span class="chat-meta">
                {state} <span class="muted">{ago(lastAt(chat))}</span>
              </span>
              {kept.get(id)?.lastText && <span class="muted chat-last">{kept.get(id)?.lastText}</span>}
              {chat.pending_delete && (
                <span class="muted pending-reason">
                  Delete not taken yet{reasons.get(id) ? `: ${reasons.get(id)}` : ""} — sent again when the device
                  links.
                </span>
              )}
            </a>
          </li>
        );
      })}
    </ul>
  );
}
