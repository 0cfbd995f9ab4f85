import { describe, expect, it } from "vitest";
import { createDevice, createUser } from "../helpers/fixtures";
import { call } from "../helpers/v1";

const PATH = "/v1/me/personalization";
const put = (auth: string, body: unknown) => call(PATH, auth, { method: "PUT", body });

async function deviceWithPersonalization(available: boolean) {
  const admin = await createUser({ admin: true });
  const user = await createUser();
  const device = await createDevice(user.userId);
  const res = await call(`/api/admin/accounts/${user.userId}/personalization`, admin.apiAuth, {
    method: "PUT",
    body: { available },
  });
  expect(res.status).toBe(200);
  return { user, device };
}

describe("/v1/me/personalization", () => {
  it("starts empty and says whether it is available", async () => {
    const { device } = await deviceWithPersonalization(true);
    const res = await call(PATH, device.auth);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      enabled: false,
      available: true,
      personality: "",
      personality_custom: "",
      instructions: "",
    });
  });

  it("changes only the fields a PUT sends", async () => {
    const { device } = await deviceWithPersonalization(true);
    expect(
      (await put(device.auth, { enabled: true, personality: "pirate", instructions: "Answer briefly." })).status,
    ).toBe(200);
    const res = await put(device.auth, { personality_custom: "Arr, but kind." });
    expect(res.status).toBe(200);
    const expected = {
      enabled: true,
      available: true,
      personality: "pirate",
      personality_custom: "Arr, but kind.",
      instructions: "Answer briefly.",
    };
    expect(await res.json()).toEqual(expected);
    expect(await (await call(PATH, device.auth)).json()).toEqual(expected);
    // A client may send available back; it stays the operator's to set.
    await put(device.auth, { enabled: false, available: false });
    expect(await (await call(PATH, device.auth)).json()).toEqual({ ...expected, enabled: false });
  });

  it("is shared by the account's devices", async () => {
    const { user, device } = await deviceWithPersonalization(true);
    await put(device.auth, { instructions: "Use British spelling." });
    const other = await createDevice(user.userId, "desktop");
    expect(await (await call(PATH, other.auth)).json()).toMatchObject({ instructions: "Use British spelling." });
  });

  it("refuses a PUT with 403 when personalization is not available, saying so, and keeps what was saved", async () => {
    const { device } = await deviceWithPersonalization(false);
    const res = await put(device.auth, { enabled: true });
    expect(res.status).toBe(403);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/not available for this account/);
    expect(await (await call(PATH, device.auth)).json()).toMatchObject({ enabled: false, available: false });
  });

  it("refuses an API token with 403, saying a device token is needed", async () => {
    const { user } = await deviceWithPersonalization(true);
    for (const res of [await call(PATH, user.apiAuth), await put(user.apiAuth, { enabled: true })]) {
      expect(res.status).toBe(403);
      expect((await res.json<{ detail: string }>()).detail).toMatch(/device token/);
    }
  });

  it("refuses each bad type with 422 and a detail naming the field, changing nothing", async () => {
    const { device } = await deviceWithPersonalization(true);
    await put(device.auth, { personality: "calm" });
    const cases: [Record<string, unknown>, string][] = [
      [{ enabled: "yes" }, "enabled"],
      [{ enabled: 1 }, "enabled"],
      [{ personality: 5 }, "personality"],
      [{ personality_custom: null }, "personality_custom"],
      [{ instructions: ["a"] }, "instructions"],
      [{ personality: "loud", enabled: "no" }, "enabled"],
    ];
    for (const [body, field] of cases) {
      const res = await put(device.auth, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect((await res.json<{ detail: string }>()).detail).toContain(field);
    }
    expect(await (await call(PATH, device.auth)).json()).toMatchObject({ personality: "calm", enabled: false });
  });
});
