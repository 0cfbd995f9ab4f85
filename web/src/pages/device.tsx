/**
 * One device: its chats (a drawer on a phone, a column on a wide screen), the chat open under one bar —
 * transcript, cards, composer — or a new session, or what is left of a deleted chat's address: a way back; and a
 * terminal on the device. The page title counts the cards waiting.
 * Keyboard: Alt+N goes to the next card waiting, Alt+C to the chat list (Escape closes it on a phone), "/" to the
 * message box.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useMemo, useState } from "preact/hooks";
import { account } from "../app/account";
import { background } from "../app/background";
import { APP_NAME } from "../app/app-name";
import { type DeviceInfo, devices } from "../app/http";
import { chatPath, devicePath } from "../app/paths";
import { preloadedDevices } from "../app/preloaded";
import { CardList } from "../cards/cards";
import { ChatList, chatTitle } from "../chat/chat-list";
import { ChatView } from "../chat/chat-view";
import { DeviceStore } from "../link/device-store";
import { type BarProps, DeviceBar } from "./device-bar";
import { NewSession } from "./new-session";
import { PushOffer } from "./push-offer";
import { TerminalPanel } from "../terminal/terminal-panel";

export function DevicePage({ deviceId, sessionId }: { deviceId: string; sessionId?: string }) {
  const store = useMemo(() => new DeviceStore(deviceId), [deviceId]);
  const [name, setName] = useState(deviceId);
  const [drawer, setDrawer] = useState(false);
  const [terminal, setTerminal] = useState(false);

  // Before the socket starts: one the page's inline script opened already opens the chat shown as it is taken over.
  useLayoutEffect(() => {
    background(store.openChat(sessionId ?? null));
    setDrawer(false);
  }, [store, sessionId]);

  // Before the first paint, not after it: on a slow phone the socket's dial is the open chat's first wait.
  useLayoutEffect(() => {
    store.start();
    const named = (list: DeviceInfo[]) => setName(list.find((d) => d.id === deviceId)?.name ?? deviceId);
    const preloaded = preloadedDevices(account.peek());
    if (preloaded) named(preloaded);
    else background(devices().then(named, () => {}));
    return () => store.stop();
  }, [store]);

  const cards = store.cards.waiting.value;
  const chat = sessionId ? store.chats.get(sessionId) : undefined;
  useEffect(() => {
    const page = sessionId ? chatTitle(chat, sessionId) : name;
    document.title = `${cards.length > 0 ? `(${cards.length}) ` : ""}${page} · ${APP_NAME}`;
  }, [cards.length, chat?.title, name, sessionId]);

  useEffect(() => {
    const keys = (e: KeyboardEvent) => {
      if (e.altKey && e.code === "KeyN") {
        e.preventDefault();
        focusNextCard();
      } else if (e.altKey && e.code === "KeyC") {
        e.preventDefault();
        setDrawer(true);
        document.querySelector<HTMLElement>(".chat-list a")?.focus();
      } else if (e.key === "/" && !isTyping(e.target)) {
        const box = document.querySelector<HTMLTextAreaElement>("textarea[name=prompt]");
        if (box) {
          e.preventDefault();
          box.focus();
        }
      }
    };
    document.addEventListener("keydown", keys);
    return () => document.removeEventListener("keydown", keys);
  }, []);

  useEffect(() => {
    if (!drawer) return;
    // Escape closes the open drawer, as it would a dialog.
    const close = (e: KeyboardEvent) => {
      if (e.key === "Escape") setDrawer(false);
    };
    document.addEventListener("keydown", close);
    return () => document.removeEventListener("keydown", close);
  }, [drawer]);

  const status = store.link.status.value;
  const linkUp = store.link.up.value;
  const elsewhere = cards.filter((c) => c.params.sessionId !== sessionId);
  const host = status?.hello?.device?.host;

  const linkBadge = (
    <span
      id="link-state"
      class={linkUp ? "badge online" : "badge"}
      title={store.link.connected.value ? undefined : "not connected to the instance"}
    >
      {linkState(linkUp, store.link.connected.value)}
    </span>
  );
  const bar = (props: BarProps) => (
    <>
      <DeviceBar
        {...props}
        drawer={drawer}
        unread={store.chats.unread.value.size > 0}
        toggleDrawer={() => setDrawer(!drawer)}
        waiting={
          elsewhere.length > 0 && (
            <a
              class="badge waiting"
              href={chatPath(deviceId, elsewhere[0]!.params.sessionId)}
              aria-label={`${elsewhere.length} waiting in other chats`}
            >
              {elsewhere.length} waiting
            </a>
          )
        }
      />
      <PushOffer waiting={cards.length > 0} />
    </>
  );

  let main: ComponentChildren;
  if (!sessionId)
    main = (
      <>
        {bar({ title: name, status: linkBadge })}
        <NewSession store={store} deviceId={deviceId} />
        <CardList store={store} cards={cards} />
      </>
    );
  else if (!chat && store.chats.listed.value)
    main = (
      <>
        {bar({ title: "Chat deleted", status: linkBadge })}
        <section class="gone pad">
          <p>This chat was deleted (or never was on {name}): there is nothing more to read or send here.</p>
          <p class="actions">
            <a class="button" href={devicePath(deviceId)}>
              Start a new chat
            </a>
            <button type="button" class="secondary" onClick={() => setDrawer(true)}>
              Open another chat
            </button>
          </p>
        </section>
      </>
    );
  else
    main = (
      <ChatView key={sessionId} store={store} deviceId={deviceId} sessionId={sessionId} bar={bar} link={linkBadge} />
    );

  return (
    <div class={`device-page${drawer ? " drawer-open" : ""}`}>
      <aside id="chat-drawer" class="sidebar" aria-label="Chats">
        <div class="device-title">
          <a href="/" class="back" aria-label="All devices">
            ‹
          </a>
          <h2>{name}</h2>
        </div>
        {host && <p class="muted device-host">{[host, status?.hello?.device?.platform].filter(Boolean).join(" · ")}</p>}
        <div class="actions">
          <a class="button" href={devicePath(deviceId)}>
            New chat
          </a>
          {store.link.has("terminal") && (
            <button type="button" class="secondary" aria-pressed={terminal} onClick={() => setTerminal(!terminal)}>
              Terminal
            </button>
          )}
        </div>
        <ChatList store={store} deviceId={deviceId} current={sessionId ?? null} />
      </aside>
      <button
        type="button"
        class="scrim"
        aria-label="Close the chat list"
        tabIndex={-1}
        onClick={() => setDrawer(false)}
      />
      <section class="device-main">
        <p class="error" role="alert">
          {store.problem.value}
        </p>
        {main}
        {terminal && store.link.has("terminal") && (
          <TerminalPanel store={store} cwd={chat?.cwd ?? null} onClose={() => setTerminal(false)} />
        )}
      </section>
    </div>
  );
}

function linkState(up: boolean, connected: boolean): string {
  if (up) return "online";
  return connected ? "offline" : "connecting…";
}

function isTyping(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))
  );
}

/** Moves the focus to the first control of the next card after the one focused (or the first). */
function focusNextCard(): void {
  const cards = [...document.querySelectorAll<HTMLElement>("[data-card]")];
  if (cards.length === 0) return;
  const at = cards.findIndex((c) => c.contains(document.activeElement));
  const next = cards[(at + 1) % cards.length]!;
  next.scrollIntoView({ block: "nearest" });
  next.querySelector<HTMLElement>("button, input, textarea, select")?.focus();
}
