/** One device: its chats, a live transcript, the composer, the cards it asks, and a terminal on it. */
import { chats, devices, type ChatInfo } from "../app/http";
import { ClientSocket, RpcFailure, type Params } from "../client-socket.js";
import { renderCard, toolCallIdOf } from "../cards.js";
import { Composer } from "../composer.js";
import { background } from "../app/background";
import { h, replace } from "../dom.js";
import { TerminalPanel } from "../terminal.js";
import { Transcript } from "../transcript.js";

interface Status {
  link: "up" | "down";
  hello?: { device?: { host?: string }; limits?: { roots?: string[] } } | null;
  capabilities?: string[];
}

interface HistoryTurn {
  role: "user" | "assistant";
  text: string;
}

export function deviceView(root: Element, deviceId: string, initialSession: string | null): () => void {
  const socket = new ClientSocket(deviceId);
  const transcripts = new Map<string, Transcript>();
  let current: string | null = initialSession;
  let status: Status = { link: "down" };

  const badge = h("span", { class: "badge", id: "link-state" }, "connecting…");
  const title = h("span", {}, deviceId);
  background(
    devices().then(
      (list) => (title.textContent = list.find((d) => d.id === deviceId)?.name ?? deviceId),
      () => {},
    ),
  );
  const chatList = h("ul", { class: "chats" });
  const cardsEl = h("div", { class: "cards" });
  const pane = h("div", { class: "pane" });
  const error = h("p", { class: "error", role: "alert" });
  const cwd = h("input", { name: "cwd", placeholder: "/absolute/path/to/project", required: true });
  // The composer waits for a session: a prompt typed before one exists would have nowhere to go.
  const composer = new Composer(socket, {
    session: () => current,
    capabilities: () => status.capabilities ?? [],
    send: () => background(send()),
  });
  const text = composer.text;
  const terminalSlot = h("div", { class: "terminal-slot" });
  let terminal: TerminalPanel | null = null;
  const terminalButton = h(
    "button",
    { class: "secondary", hidden: true, onclick: () => background(openTerminal()) },
    "Terminal",
  );

  const show = (err: unknown) =>
    (error.textContent = err instanceof RpcFailure || err instanceof Error ? err.message : String(err));
  const transcript = (sessionId: string) => {
    let t = transcripts.get(sessionId);
    if (!t) {
      t = new Transcript();
      transcripts.set(sessionId, t);
    }
    return t;
  };

  const select = async (sessionId: string) => {
    current = sessionId;
    text.disabled = false;
    history.replaceState(null, "", `/devices/${encodeURIComponent(deviceId)}/chats/${encodeURIComponent(sessionId)}`);
    const fresh = !transcripts.has(sessionId);
    const t = transcript(sessionId);
    replace(pane, t.el);
    background(composer.load(sessionId));
    if (fresh && status.capabilities?.includes("sessions")) {
      try {
        const past = await socket.request<{ turns: HistoryTurn[] }>("_lembas/session/history", { sessionId });
        for (const turn of past.turns) turn.role === "user" ? t.userMessage(turn.text) : t.note(turn.text, "agent");
      } catch (err) {
        show(err);
      }
    }
  };

  const refreshChats = async () => {
    const list: ChatInfo[] = await chats(deviceId).catch(() => []);
    replace(
      chatList,
      ...list.map((c) =>
        h(
          "li",
          {},
          h(
            "a",
            {
              href: "#",
              onclick: (e: Event) => {
                e.preventDefault();
                background(select(c.session_id));
              },
            },
            c.title ?? c.session_id,
          ),
        ),
      ),
    );
  };

  const newSession = async (e: Event) => {
    e.preventDefault();
    error.textContent = "";
    try {
      const res = await socket.request<{ sessionId: string }>("session/new", { cwd: cwd.value, mcpServers: [] });
      await refreshChats();
      await select(res.sessionId);
    } catch (err) {
      show(err);
    }
  };

  const send = async () => {
    const value = text.value.trim();
    if (!value || !current) return;
    const sessionId = current;
    const t = transcript(sessionId);
    text.value = "";
    t.userMessage(value);
    try {
      const res = await socket.request<{ stopReason: string }>("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: value }],
      });
      t.note(`turn ended: ${res.stopReason}`);
    } catch (err) {
      t.note(err instanceof Error ? err.message : String(err), "error");
    }
  };

  const openTerminal = async () => {
    error.textContent = "";
    terminalButton.disabled = true;
    try {
      terminal = await TerminalPanel.open(socket, cwd.value.trim(), (note) => {
        terminal = null;
        terminalButton.disabled = false;
        replace(terminalSlot, h("p", { class: "muted" }, note));
      });
      replace(terminalSlot, terminal.el);
      terminal.focus();
    } catch (err) {
      terminalButton.disabled = false;
      show(err);
    }
  };

  const applyStatus = (s: Status) => {
    status = s;
    terminalButton.hidden = !s.capabilities?.includes("terminal");
    if (current) background(composer.load(current));
  };

  socket.onState = async (state) => {
    if (state === "closed") {
      terminal?.end("The connection to the instance closed; so did the terminal.");
      badge.textContent = "disconnected";
      badge.className = "badge";
      return;
    }
    try {
      applyStatus(await socket.request<Status>("_instance/status"));
      setLink(status.link);
      if (!cwd.value) cwd.value = status.hello?.limits?.roots?.[0] ?? "";
    } catch (err) {
      show(err);
    }
  };
  const setLink = (link: "up" | "down") => {
    badge.textContent = link === "up" ? "online" : "offline";
    badge.className = link === "up" ? "badge online" : "badge";
  };
  socket.onNotification = (method, params: Params) => {
    if (method === "_instance/link") {
      setLink(params.link === "up" ? "up" : "down");
      if (params.link === "up") background(socket.request<Status>("_instance/status").then(applyStatus));
      // Every terminal closes with the link.
      else terminal?.end("The device's link went down; its terminal closed.");
    } else if (method === "session/update" && typeof params.sessionId === "string") {
      transcript(params.sessionId).apply(params);
      composer.apply(params);
    } else if (method === "_lembas/terminal/output" && terminal && params.terminalId === terminal.terminalId) {
      terminal.output(String(params.data ?? ""));
    } else if (method === "_lembas/terminal/exit" && terminal && params.terminalId === terminal.terminalId) {
      terminal.exited(params.code);
    } else if (method === "_lembas/permission/settled") {
      cardsEl.querySelector(`[data-tool-call-id="${CSS.escape(String(params.toolCallId))}"]`)?.remove();
    } else if (method === "_lembas/session/announce" || method === "_lembas/session/deleted") {
      background(refreshChats());
    }
  };
  socket.onRequest = (request) => {
    const el = renderCard(request, (result) => {
      socket.respond(request.id, result);
      el?.remove();
    });
    if (!el) return socket.refuse(request.id, request.method);
    cardsEl.querySelector(`[data-tool-call-id="${CSS.escape(toolCallIdOf(request.params))}"]`)?.remove();
    cardsEl.append(el);
  };

  replace(
    root,
    h("h1", {}, h("a", { href: "/" }, "Devices"), " / ", title, " ", badge),
    h(
      "div",
      { class: "device" },
      h(
        "aside",
        {},
        h("h2", {}, "Chats"),
        chatList,
        h(
          "form",
          { onsubmit: newSession },
          h("label", {}, "New session in", cwd),
          h("button", { type: "submit" }, "Start"),
        ),
      ),
      h(
        "main",
        {},
        cardsEl,
        pane,
        error,
        h(
          "div",
          { class: "composer" },
          text,
          h("button", { onclick: () => background(send()) }, "Send"),
          h(
            "button",
            { class: "secondary", onclick: () => current && socket.notify("session/cancel", { sessionId: current }) },
            "Cancel",
          ),
          terminalButton,
        ),
        composer.list,
        terminalSlot,
      ),
    ),
  );
  socket.connect();
  background(refreshChats());
  if (initialSession) background(select(initialSession));
  return () => socket.close();
}
