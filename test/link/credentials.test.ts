import { describe, expect, it } from "vitest";
import { call } from "../helpers/requests";
import { attachClient, linkedDevice, ORIGIN } from "../helpers/link";

/** The id of the user's API token, as the instance lists it. */
async function apiTokenId(apiAuth: string): Promise<string> {
  const res = await call("GET", "/api/tokens", { headers: { authorization: apiAuth } });
  const [token] = (await res.json()) as { id: string }[];
  return token!.id;
}

describe("client sockets end with the credential they were opened with", () => {
  it("deleting an API token closes the sockets opened with it (4403), and no other", async () => {
    const { user, device, client } = await linkedDevice();
    const browser = await attachClient(user, device.deviceId, "cookie");
    const id = await apiTokenId(user.apiAuth);
    const res = await call("DELETE", `/api/tokens/${id}`, { headers: { cookie: user.cookie, origin: ORIGIN } });
    expect(res.status).toBe(204);
    const closed = await client.closed;
    expect(closed.code).toBe(4403);
    expect((await browser.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
  });

  it("signing out closes the browser's sockets (4403) while the script's stay", async () => {
    const { user, device, client } = await linkedDevice();
    const browser = await attachClient(user, device.deviceId, "cookie");
    const res = await call("POST", "/api/auth/logout", { headers: { cookie: user.cookie, origin: ORIGIN } });
    expect(res.status).toBe(204);
    expect((await browser.closed).code).toBe(4403);
    expect((await client.call(1, "_instance/status")).result).toMatchObject({ link: "up" });
  });
});
