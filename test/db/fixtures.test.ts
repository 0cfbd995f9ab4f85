import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authenticateDevice, authenticatePerson } from "../../src/http/auth";
import { createDevice, createUser } from "../helpers/fixtures";

const req = (headers: Record<string, string>) => new Request("http://localhost/x", { headers });

describe("credentials", () => {
  it("an API token, a session cookie and a device token each identify their owner", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    expect(await authenticatePerson(req({ authorization: user.apiAuth }), env)).toEqual({
      userId: user.userId,
      via: "api",
      credential: expect.stringMatching(/^lba_/),
      scopes: [],
    });
    expect(await authenticatePerson(req({ cookie: user.cookie }), env)).toEqual({
      userId: user.userId,
      via: "session",
      credential: expect.stringMatching(/^lbs_/),
      scopes: ["library"],
      expiresAt: expect.any(Number),
    });
    expect(await authenticateDevice(req({ authorization: device.auth }), env)).toEqual({
      userId: user.userId,
      deviceId: device.deviceId,
    });
  });

  it("refuses a device token where a person is needed, and an API token where a device is", async () => {
    const user = await createUser();
    const device = await createDevice(user.userId);
    await expect(authenticatePerson(req({ authorization: device.auth }), env)).rejects.toMatchObject({ status: 401 });
    await expect(authenticateDevice(req({ authorization: user.apiAuth }), env)).rejects.toMatchObject({ status: 401 });
  });

  it("refuses a token whose secret was altered", async () => {
    const device = await createDevice((await createUser()).userId);
    const forged = device.auth.slice(0, -1) + (device.auth.endsWith("A") ? "B" : "A");
    await expect(authenticateDevice(req({ authorization: forged }), env)).rejects.toMatchObject({ status: 401 });
  });
});
