import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("discovery", () => {
  it("says protocol 1 and lists protocols 1 and 2, with the login endpoints", async () => {
    const res = await SELF.fetch("http://localhost/.well-known/lembas.json");
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown> & { endpoints: Record<string, string> };
    expect(body.protocol).toBe(1);
    expect(body.protocols).toEqual([1, 2]);
    expect(body.endpoints.device_authorization).toBe("http://localhost/api/devices/authorize");
    expect(body.endpoints.device_token).toBe("http://localhost/api/devices/token");
    expect(body.endpoints.link).toBe("ws://localhost/api/devices/link");
  });

  it("gives the instance's name, version and protocols", async () => {
    const res = await SELF.fetch("http://localhost/api/v1/instance");
    expect(await res.json()).toEqual({ name: "lembas-edge", version: expect.any(String), protocols: [1, 2] });
  });

  it("answers an unknown route with a JSON 404", async () => {
    const res = await SELF.fetch("http://localhost/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "no such route" });
  });
});
