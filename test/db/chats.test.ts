import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  chatFromAnnounce,
  chatFromSessionNew,
  deleteChat,
  findChat,
  listChats,
  markChatLeft,
  setChatTitle,
  type ChatInfo,
} from "../../src/db/chats";
import {
  clearPendingDelete,
  listPendingDeletes,
  MAX_REFUSALS,
  recordPendingDelete,
  recordRefusal,
} from "../../src/db/pending-deletes";
import { createDevice, createUser } from "../helpers/fixtures";
import { call, jsonOf } from "../helpers/requests";
import { announceParams, CHAT_QUOTA } from "../helpers/chats";

const db = env.DB;

async function owner() {
  const user = await createUser();
  const device = await createDevice(user.userId);
  return { user, device, deviceId: device.deviceId, userId: user.userId };
}

describe("chats in D1", () => {
  it("session/new makes a web chat with the answer's model and mode", async () => {
    const { deviceId, userId } = await owner();
    await chatFromSessionNew(
      db,
      deviceId,
      userId,
      "/home/me/work",
      {
        sessionId: "ses_web",
        modes: { currentModeId: "manual", availableModes: [] },
        _meta: { lembas: { model: "deepseek/flash", mode: "edit", effort: "off" } },
      },
      CHAT_QUOTA,
    );
    expect(await findChat(db, userId, deviceId, "ses_web")).toMatchObject({
      session_id: "ses_web",
      cwd: "/home/me/work",
      origin: "web",
      model: "deepseek/flash",
      mode: "edit",
      title: null,
      busy: false,
      pending_delete: false,
    });
  });

  it("a plain ACP answer (no _meta) still makes a chat, its mode from modes", async () => {
    const { deviceId, userId } = await owner();
    await chatFromSessionNew(
      db,
      deviceId,
      userId,
      "/w",
      {
        sessionId: "ses_plain",
        modes: { currentModeId: "ask", availableModes: [] },
      },
      CHAT_QUOTA,
    );
    expect(await findChat(db, userId, deviceId, "ses_plain")).toMatchObject({
      model: null,
      mode: "ask",
      origin: "web",
    });
  });

  it("an announce makes a terminal chat, and a later one updates it", async () => {
    const { deviceId, userId } = await owner();
    expect(await chatFromAnnounce(db, deviceId, userId, announceParams("ses_t"), CHAT_QUOTA)).toBe(true);
    expect(await findChat(db, userId, deviceId, "ses_t")).toMatchObject({
      origin: "terminal",
      title: "Fix the build",
      busy: true,
      mode: "edit",
    });
    expect(
      await chatFromAnnounce(
        db,
        deviceId,
        userId,
        announceParams("ses_t", { title: null, busy: false, mode: "plan" }),
        CHAT_QUOTA,
      ),
    ).toBe(true);
    expect(await findChat(db, userId, deviceId, "ses_t")).toMatchObject({
      title: "Fix the build",
      busy: false,
      mode: "plan",
    });
  });

  it("an announce never recreates a chat that is pending deletion", async () => {
    const { deviceId, userId } = await owner();
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_gone"), CHAT_QUOTA);
    await recordPendingDelete(db, deviceId, userId, "ses_gone", "offline");
    expect(
      await chatFromAnnounce(db, deviceId, userId, announceParams("ses_gone", { title: "renamed" }), CHAT_QUOTA),
    ).toBe(false);
    expect(await findChat(db, userId, deviceId, "ses_gone")).toMatchObject({
      title: "Fix the build",
      pending_delete: true,
    });
    expect(await clearPendingDelete(db, deviceId, "ses_gone")).toBe(true);
    expect(await findChat(db, userId, deviceId, "ses_gone")).toBeNull();
    await recordPendingDelete(db, deviceId, userId, "ses_gone", "offline");
    expect(await chatFromAnnounce(db, deviceId, userId, announceParams("ses_gone"), CHAT_QUOTA)).toBe(false);
    expect(await findChat(db, userId, deviceId, "ses_gone")).toBeNull();
  });

  it("title events rename a chat; an unknown chat is left alone", async () => {
    const { deviceId, userId } = await owner();
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_title"), CHAT_QUOTA);
    expect(await setChatTitle(db, deviceId, "ses_title", "Ship it")).toBe(true);
    expect((await findChat(db, userId, deviceId, "ses_title"))?.title).toBe("Ship it");
    expect(await setChatTitle(db, deviceId, "ses_nope", "x")).toBe(false);
  });

  it("left marks the chat idle and says whether it can be opened again; an announce brings it back", async () => {
    const { deviceId, userId } = await owner();
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_left"), CHAT_QUOTA);
    expect(await markChatLeft(db, deviceId, "ses_left", false)).toBe(true);
    const row = await db
      .prepare("SELECT left_at, available, busy FROM chats WHERE device_id = ? AND session_id = ?")
      .bind(deviceId, "ses_left")
      .first();
    expect(row).toMatchObject({ available: 0, busy: 0 });
    expect(row?.left_at).toEqual(expect.any(Number));
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_left"), CHAT_QUOTA);
    expect(
      await db.prepare("SELECT left_at, available FROM chats WHERE session_id = ?").bind("ses_left").first(),
    ).toEqual({ left_at: null, available: 1 });
  });

  it("deleteChat says whether there was one", async () => {
    const { deviceId, userId } = await owner();
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_del"), CHAT_QUOTA);
    expect(await deleteChat(db, deviceId, "ses_del")).toBe(true);
    expect(await deleteChat(db, deviceId, "ses_del")).toBe(false);
  });

  it("revoking a device takes its chats and pending deletes with it", async () => {
    const { deviceId, userId } = await owner();
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_rev"), CHAT_QUOTA);
    await recordPendingDelete(db, deviceId, userId, "ses_other", "offline");
    await db.prepare("DELETE FROM devices WHERE id = ?").bind(deviceId).run();
    expect(await listChats(db, userId)).toEqual([]);
    expect(await listPendingDeletes(db, deviceId)).toEqual([]);
  });
});

describe("pending deletes", () => {
  it("are listed oldest first, pending ones only", async () => {
    const { deviceId, userId } = await owner();
    for (const s of ["ses_a", "ses_b", "ses_c"]) await recordPendingDelete(db, deviceId, userId, s, "offline");
    // Asked again: keeps its place.
    await recordPendingDelete(db, deviceId, userId, "ses_a", "no answer");
    for (let i = 0; i < MAX_REFUSALS; i++) await recordRefusal(db, deviceId, "ses_b", "not yours");
    const pending = await listPendingDeletes(db, deviceId);
    expect(pending.map((p) => p.session_id)).toEqual(["ses_a", "ses_c"]);
    expect(pending[0]).toMatchObject({ last_error: "no answer", refusals: 0, user_id: userId });
  });

  it("give up at the fifth refusal, keep the row as the record and delete the chat", async () => {
    const { deviceId, userId } = await owner();
    await chatFromAnnounce(db, deviceId, userId, announceParams("ses_stubborn"), CHAT_QUOTA);
    await recordPendingDelete(db, deviceId, userId, "ses_stubborn", "offline");
    for (let i = 1; i < MAX_REFUSALS; i++) {
      expect(await recordRefusal(db, deviceId, "ses_stubborn", `refused ${i}`)).toEqual({
        refusals: i,
        givenUp: false,
      });
    }
    expect(await findChat(db, userId, deviceId, "ses_stubborn")).toMatchObject({ pending_delete: true });
    expect(await recordRefusal(db, deviceId, "ses_stubborn", "refused 5")).toEqual({ refusals: 5, givenUp: true });
    expect(await recordRefusal(db, deviceId, "ses_stubborn", "again")).toBeNull();
    expect(await findChat(db, userId, deviceId, "ses_stubborn")).toBeNull();
    const record = await db
      .prepare("SELECT * FROM pending_deletes WHERE device_id = ? AND session_id = ?")
      .bind(deviceId, "ses_stubborn")
      .first();
    expect(record).toMatchObject({
      state: "given_up",
      refusals: 5,
      last_error: "refused 5",
      given_up_at: expect.any(Number),
    });
    expect(await listPendingDeletes(db, deviceId)).toEqual([]);
    // The person deleting it again starts afresh.
    await recordPendingDelete(db, deviceId, userId, "ses_stubborn", "offline");
    expect(await listPendingDeletes(db, deviceId)).toMatchObject([{ session_id: "ses_stubborn", refusals: 0 }]);
  });

  it("a refusal for nothing pending, or a clear of nothing, is no-op", async () => {
    const { deviceId } = await owner();
    expect(await recordRefusal(db, deviceId, "ses_none", "x")).toBeNull();
    expect(await clearPendingDelete(db, deviceId, "ses_none")).toBe(false);
  });
});

describe("GET /api/chats", () => {
  it("needs a credential", async () => {
    const res = await call("GET", "/api/chats");
    expect(res.status).toBe(401);
    expect(await jsonOf(res)).toHaveProperty("detail");
  });

  it("lists only the person's own chats, newest first, with a device filter", async () => {
    const me = await owner();
    const other = await createDevice(me.userId, "desktop");
    const stranger = await owner();
    await chatFromAnnounce(db, me.deviceId, me.userId, announceParams("ses_old"), CHAT_QUOTA);
    await chatFromAnnounce(db, other.deviceId, me.userId, announceParams("ses_mid"), CHAT_QUOTA);
    await chatFromAnnounce(db, stranger.deviceId, stranger.userId, announceParams("ses_theirs"), CHAT_QUOTA);
    await chatFromAnnounce(db, me.deviceId, me.userId, announceParams("ses_new"), CHAT_QUOTA);
    await db
      .prepare(
        "UPDATE chats SET updated_at = CASE session_id WHEN 'ses_old' THEN 1 WHEN 'ses_mid' THEN 2 ELSE 3 END WHERE user_id = ?",
      )
      .bind(me.userId)
      .run();
    await recordPendingDelete(db, me.deviceId, me.userId, "ses_old", "offline");

    const all = await jsonOf<ChatInfo[]>(
      await call("GET", "/api/chats", { headers: { authorization: me.user.apiAuth } }),
    );
    expect(all.map((c) => c.session_id)).toEqual(["ses_new", "ses_mid", "ses_old"]);
    expect(all[0]).toEqual({
      device_id: me.deviceId,
      session_id: "ses_new",
      title: "Fix the build",
      cwd: "/home/me/work/app",
      origin: "terminal",
      model: "deepseek/flash",
      mode: "edit",
      busy: true,
      updated_at: 3,
      pending_delete: false,
    });
    expect(all[2]?.pending_delete).toBe(true);

    const one = await jsonOf<ChatInfo[]>(
      await call("GET", `/api/chats?device=${me.deviceId}`, { headers: { cookie: me.user.cookie } }),
    );
    expect(one.map((c) => c.session_id)).toEqual(["ses_new", "ses_old"]);
  });

  it("answers 404 for another person's device and for none", async () => {
    const me = await owner();
    const stranger = await owner();
    await chatFromAnnounce(db, stranger.deviceId, stranger.userId, announceParams("ses_theirs"), CHAT_QUOTA);
    for (const device of [stranger.deviceId, "no-such-device"]) {
      const res = await call("GET", `/api/chats?device=${device}`, { headers: { authorization: me.user.apiAuth } });
      expect(res.status).toBe(404);
      expect(await jsonOf(res)).toEqual({ detail: "no such device" });
    }
  });

  it("refuses a device token", async () => {
    const me = await owner();
    expect((await call("GET", "/api/chats", { headers: { authorization: me.device.auth } })).status).toBe(401);
  });
});

describe("DELETE /api/chats/:deviceId/:sessionId", () => {
  it("keeps the delete pending while the device is not linked", async () => {
    const me = await owner();
    await chatFromAnnounce(db, me.deviceId, me.userId, announceParams("ses_bye"), CHAT_QUOTA);
    const res = await call("DELETE", `/api/chats/${me.deviceId}/ses_bye`, { headers: { cookie: me.user.cookie } });
    expect(res.status).toBe(202);
    expect(await jsonOf(res)).toEqual({ status: "pending", reason: "offline" });
    expect(await listPendingDeletes(db, me.deviceId)).toMatchObject([
      { session_id: "ses_bye", user_id: me.userId, last_error: "offline", refusals: 0 },
    ]);
    const [chat] = await jsonOf<ChatInfo[]>(await call("GET", "/api/chats", { headers: { cookie: me.user.cookie } }));
    expect(chat).toMatchObject({ session_id: "ses_bye", pending_delete: true });
  });

  it("answers 404 for another person's chat or device, or a chat that does not exist, and records nothing", async () => {
    const me = await owner();
    const stranger = await owner();
    await chatFromAnnounce(db, stranger.deviceId, stranger.userId, announceParams("ses_theirs"), CHAT_QUOTA);
    const auth = { authorization: me.user.apiAuth };
    expect(await jsonOf(await call("DELETE", `/api/chats/${stranger.deviceId}/ses_theirs`, { headers: auth }))).toEqual(
      { detail: "no such device" },
    );
    const missing = await call("DELETE", `/api/chats/${me.deviceId}/ses_missing`, { headers: auth });
    expect(missing.status).toBe(404);
    expect(await jsonOf(missing)).toEqual({ detail: "no such chat" });
    expect(await listPendingDeletes(db, stranger.deviceId)).toEqual([]);
    expect(await listPendingDeletes(db, me.deviceId)).toEqual([]);
  });

  it("refuses no credential and a foreign Origin", async () => {
    const me = await owner();
    await chatFromAnnounce(db, me.deviceId, me.userId, announceParams("ses_keep"), CHAT_QUOTA);
    expect((await call("DELETE", `/api/chats/${me.deviceId}/ses_keep`)).status).toBe(401);
    const foreign = await call("DELETE", `/api/chats/${me.deviceId}/ses_keep`, {
      headers: { cookie: me.user.cookie, origin: "https://evil.example" },
    });
    expect(foreign.status).toBe(403);
    expect(await listPendingDeletes(db, me.deviceId)).toEqual([]);
  });
});
