/**
 * The benchmark's person and devices, made through the instance's real HTTP API: the first account
 * (/api/auth/setup), a sign-in, an API token, and devices through the device login (RFC 8628: authorize → approve
 * → token), exactly as the CLI and a person's browser do it.
 */
import { inBatches, progress } from "./progress.js";

export interface Person {
  /** `Authorization: Bearer lba_…`, for the client interface and the approvals. */
  auth: string;
  /** `lembas_session=…`, the browser's sign-in. */
  cookie: string;
}

export interface Device {
  id: string;
  token: string;
}

async function call<T>(
  origin: string,
  route: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T; response: Response }> {
  const response = await fetch(`${origin}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as T, response };
}

function expectStatus(what: string, got: { status: number; body: unknown }, want: number): void {
  if (got.status !== want) throw new Error(`${what}: HTTP ${got.status} ${JSON.stringify(got.body)}`);
}

export async function createPerson(origin: string): Promise<Person> {
  const credentials = { email: "bench@example.org", password: "a benchmark's password" };
  expectStatus("setup", await call(origin, "/api/auth/setup", credentials), 201);
  const login = await call(origin, "/api/auth/login", credentials);
  expectStatus("login", login, 200);
  const cookie = /lembas_session=[^;]+/.exec(login.response.headers.get("set-cookie") ?? "")?.[0];
  if (!cookie) throw new Error("login set no session cookie");
  const token = await call<{ token: string }>(origin, "/api/tokens", { name: "bench" }, { cookie });
  expectStatus("API token", token, 201);
  return { auth: `Bearer ${token.body.token}`, cookie };
}

/** One device through the whole device login. */
async function loginDevice(origin: string, person: Person, name: string): Promise<Device> {
  const code = await call<{ device_code: string; user_code: string }>(origin, "/api/devices/authorize", {
    name,
    host: name,
    platform: "linux",
  });
  expectStatus("authorize", code, 200);
  expectStatus(
    "approve",
    await call(origin, "/api/devices/approve", { user_code: code.body.user_code }, { authorization: person.auth }),
    200,
  );
  const token = await call<{ access_token: string; device_id: string }>(origin, "/api/devices/token", {
    device_code: code.body.device_code,
  });
  expectStatus("device token", token, 200);
  return { id: token.body.device_id, token: token.body.access_token };
}

export async function createDevices(
  origin: string,
  person: Person,
  count: number,
  concurrency: number,
): Promise<Device[]> {
  return inBatches(
    count,
    concurrency,
    (i) => loginDevice(origin, person, `bench-${i}`),
    progress(`device logins`, count),
  );
}
