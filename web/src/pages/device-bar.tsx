/**
 * The one bar over a device's page: the chat list's button, the title with its state, chats elsewhere waiting,
 * and a menu — the chat's own items (rename, delete, its folder) and, on a phone, where the app's header is
 * folded away, the app's (devices, library, usage, sign out).
 */
import type { ComponentChildren } from "preact";
import { useRef } from "preact/hooks";
import { account, leave, usageReport } from "../app/account";
import { background } from "../app/background";
import { Icon } from "../app/icons";
import { NAV } from "../app/nav";
import { UsageSummary } from "../app/usage-summary";

export interface BarProps {
  title: string;
  /** Badges after the title: the link, the turn. */
  status: ComponentChildren;
  /** The chat's items in the menu; each closes the menu when used. */
  menu?: (close: () => void) => ComponentChildren;
}

export function DeviceBar({
  title,
  status,
  menu,
  drawer,
  unread,
  toggleDrawer,
  waiting,
}: BarProps & { drawer: boolean; unread: boolean; toggleDrawer: () => void; waiting: ComponentChildren }) {
  const panel = useRef<HTMLDivElement>(null);
  const close = () => panel.current?.hidePopover();
  const who = account.value;
  return (
    <header class="chat-bar">
      <button
        type="button"
        class="secondary icon drawer-toggle"
        aria-label={unread ? "Chats (unread)" : "Chats"}
        aria-expanded={drawer}
        aria-controls="chat-drawer"
        onClick={toggleDrawer}
      >
        <Icon name="list" />
        {unread && <span class="unread-mark" aria-hidden="true" />}
      </button>
      <div class="bar-title">
        <h1 title={title}>{title}</h1>
        <span class="bar-status">{status}</span>
      </div>
      {waiting}
      <button type="button" class="secondary icon" popovertarget="chat-menu" aria-label="Menu">
        <Icon name="menu" />
      </button>
      <div id="chat-menu" class="menu" popover="auto" role="dialog" aria-label="Menu" ref={panel}>
        {menu?.(close)}
        {who && (
          <div class="app-items">
            <nav aria-label="Main">
              {NAV.map((item) => (
                <a class="menu-link" href={item.href} onClick={close}>
                  {item.label}
                </a>
              ))}
            </nav>
            {usageReport.value && <UsageSummary report={usageReport.value} />}
            <p class="muted menu-email">{who.email}</p>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                close();
                background(leave());
              }}
            >
              Sign out
            </button>
          </div>
        )}
      </div>
    </header>
  );
}
