/**
 * The chat open: its bar (title, state; its folder, rename, changes, export and delete in the menu), the transcript
 * — kept scrolled to the newest line while the person is at the bottom, earlier kept turns a button away — the
 * cards it waits on, and the composer. The Changes view takes the transcript's place until the person goes back.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { background } from "../app/background";
import { messageOf } from "../app/http";
import { Confirm, RenameForm } from "../app/inline-forms";
import { devicePath } from "../app/paths";
import { navigate } from "../app/router";
import { CardList } from "../cards/cards";
import { Composer } from "../composer/composer";
import type { KeptTurn } from "../../../src/protocol/instance";
import type { DeviceStore } from "../link/device-store";
import type { BarProps } from "../pages/device-bar";
import { ChangesView } from "./changes-view";
import { chatTitle } from "./chat-list";
import { download, markdownOf } from "./export";

/** How close to the bottom still counts as "at the bottom". */
const PINNED_PX = 48;

export function ChatView({
  store,
  deviceId,
  sessionId,
  bar,
  link,
}: {
  store: DeviceStore;
  deviceId: string;
  sessionId: string;
  /** The page's bar, given this chat's title, state and menu items. */
  bar: (props: BarProps) => ComponentChildren;
  /** The device's link state, shown with the chat's. */
  link: ComponentChildren;
}) {
  const scroller = useRef<HTMLElement>(null);
  const [mode, setMode] = useState<"view" | "rename" | "delete" | "changes">("view");
  const [kept, setKept] = useState<KeptTurn[] | null>(null);
  const [error, setError] = useState("");
  const chat = store.chats.get(sessionId);
  const title = chatTitle(chat, sessionId);
  const busy = store.busy.value.has(sessionId);
  const cards = store.cards.of(sessionId);
  const earlier = typeof store.kept.next.value.get(sessionId) === "number";

  useEffect(() => {
    if (mode === "changes") return;
    const box = scroller.current!;
    const transcript = store.turns.transcript(sessionId);
    box.replaceChildren(transcript.el);
    let pinned = true;
    let lastTop = 0;
    const onScroll = () => {
      // The reader scrolling up lets go of the newest line, and reaching it again takes hold. The transcript growing
      // between a scroll and its event (a turn sent, a frame) does neither.
      if (box.scrollHeight - box.scrollTop - box.clientHeight < PINNED_PX) pinned = true;
      else if (box.scrollTop < lastTop) pinned = false;
      lastTop = box.scrollTop;
    };
    box.addEventListener("scroll", onScroll);
    // Pinned on a change of size, not of content: a turn out of view is laid out only once it comes near (its height
    // an estimate till then), so the height changes in frames no update caused. Told after layout, once a frame,
    // the scroll reads a layout already made.
    const resized = new ResizeObserver(() => {
      if (pinned) box.scrollTop = box.scrollHeight;
    });
    resized.observe(transcript.el);
    resized.observe(box);
    return () => {
      box.removeEventListener("scroll", onScroll);
      resized.disconnect();
    };
  }, [store, sessionId, mode === "changes"]);

  /** Every kept turn of the chat, oldest first (the Changes view and the export read them all). */
  const allKept = () => store.kept.all(sessionId);

  const showChanges = () => {
    setMode("changes");
    setKept(null);
    allKept().then(setKept, (err: unknown) => {
      setError(messageOf(err));
      setKept([]);
    });
  };

  const toTurn = (turnId: string) => {
    setMode("view");
    requestAnimationFrame(() =>
      scroller.current?.querySelector(`[data-turn-id="${CSS.escape(turnId)}"]`)?.scrollIntoView({ block: "start" }),
    );
  };

  const exportAs = (format: "md" | "json") =>
    background(
      act(
        allKept().then((turns) => {
          const name = `${title.replace(/[^\w.-]+/g, "-").slice(0, 60) || "chat"}.${format}`;
          if (format === "md") download(name, markdownOf(title, turns), "text/markdown");
          else download(name, JSON.stringify({ sessionId, title, turns }, null, 2), "application/json");
        }),
      ),
    );

  const act = async (work: Promise<unknown>) => {
    setError("");
    try {
      await work;
      setMode("view");
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <div class="chat">
      {bar({
        title,
        status: (
          <>
            {link}
            {busy && <span class="badge busy">working</span>}
            {chat?.pending_delete && <span class="badge pending">deleting</span>}
          </>
        ),
        menu: (close) => {
          /** A menu item: closes the menu, then does its work. */
          const item = (label: string, work: () => void, danger = false) => (
            <button
              type="button"
              class={danger ? "secondary danger" : "secondary"}
              onClick={() => {
                close();
                work();
              }}
            >
              {label}
            </button>
          );
          return (
            <div class="chat-items">
              {chat && (
                <p class="chat-cwd" title="The chat's folder on the device">
                  {chat.cwd}
                </p>
              )}
              {store.link.has("title") && item("Rename", () => setMode("rename"))}
              {item("Changes", showChanges)}
              {item("Export Markdown", () => exportAs("md"))}
              {item("Export JSON", () => exportAs("json"))}
              {item("Delete…", () => setMode("delete"), true)}
            </div>
          );
        },
      })}
      {mode !== "view" || error ? (
        <div class="chat-head">
          {mode === "changes" && (
            <div class="actions">
              <button type="button" class="secondary" onClick={() => setMode("view")}>
                Back to the conversation
              </button>
            </div>
          )}
          {mode === "rename" && (
            <RenameForm
              label="New title"
              value={chat?.title ?? ""}
              maxLength={200}
              onSave={(value) => background(act(store.chats.rename(sessionId, value)))}
              onCancel={() => setMode("view")}
            />
          )}
          {mode === "delete" && (
            <Confirm
              legend={`Delete ${title}`}
              action="Delete the chat"
              keep="Keep it"
              onConfirm={() =>
                background(
                  act(
                    store.deleteChat(sessionId).then(() => {
                      if (!store.chats.get(sessionId)) navigate(devicePath(deviceId));
                    }),
                  ),
                )
              }
              onCancel={() => setMode("view")}
            >
              Delete this chat? The device stops it and removes it from its store, attachments too.
            </Confirm>
          )}
          <p class="error" role="alert">
            {error}
          </p>
        </div>
      ) : null}
      {mode === "changes" ? (
        <section class="chat-scroll" aria-label="Changes">
          <ChangesView turns={kept} onTurn={toTurn} />
        </section>
      ) : (
        <>
          {earlier && (
            <button
              type="button"
              class="secondary earlier"
              onClick={() => background(act(store.kept.loadPage(sessionId, store.turns.transcript(sessionId))))}
            >
              Earlier turns
            </button>
          )}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take the focus to scroll by keyboard */}
          <section class="chat-scroll" ref={scroller} tabIndex={0} aria-label="Transcript" />
        </>
      )}
      <CardList store={store} cards={cards} />
      <Composer store={store} sessionId={sessionId} />
    </div>
  );
}
