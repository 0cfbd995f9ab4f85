/** A path that is not valid percent-encoding is a client's mistake: 400 with a sentence, never a 500. */
import { describe, expect, it } from "vitest";
import { createUser } from "../helpers/fixtures";
import { call, jsonOf } from "../helpers/requests";

describe("bad percent-encoding in the path", () => {
  it.each([
    ["GET", "/api/admin/accounts/%E0%A4%A"],
    ["PUT", "/api/admin/plans/%ZZ"],
    ["DELETE", "/api/chats/device/ses_%C3"],
    ["GET", "/api/nothing/%"],
  ])("%s %s → 400", async (method, path) => {
    const admin = await createUser({ admin: true });
    const res = await call(method, path, {
      headers: { authorization: admin.apiAuth },
      body: method === "PUT" ? {} : undefined,
    });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).detail).toBe("the path is not valid percent-encoding");
  });

  it("a well-encoded parameter is decoded: a plan named with a space", async () => {
    const admin = await createUser({ admin: true });
    const res = await call("PUT", `/api/admin/plans/${encodeURIComponent("team plan")}`, {
      headers: { authorization: admin.apiAuth },
      body: { credits_per_month: 1 },
    });
    expect(res.status).toBe(200);
    expect(await jsonOf(res)).toMatchObject({ name: "team plan" });
  });
});
