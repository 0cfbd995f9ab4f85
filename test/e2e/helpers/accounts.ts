/**
 * A person and their devices, made through the instance's real HTTP API as a browser and LLeMbas CLI would: the
 * first account, a sign-in (cookie), an API token, and a device token through the device login — authorize, the
 * person's approval with the cookie from the instance's own Origin, then the token.
 */
export interface Person {
  /** `lembas_session=…`, sent with the instance's own Origin. */
  cookie: string;
  /** `Bearer lba_…`, for scripts. */
  apiAuth: string;
}

export interface LoggedInDevice {
  deviceId: string;
  /** `lbd_…` */
  token: string;
  /** The token answer's `scope` (RFC 6749 §5.1): the scopes granted, space-separated. */
  scope: string;
}

async function post<T>(
  origin: string,
  route: string,
  body: unknown,
  headers: Record<string, string>,
  want: number,
): Promise<{ body: T; response: Response }> {
  const response = await fetch(`${origin}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== want) throw new Error(`POST ${route}: HTTP ${response.status} ${text} (expected ${want})`);
  return { body: JSON.parse(text) as T, response };
}

/** The instance's first account (an admin), signed in, with an API token. */
export async function firstPerson(origin: string): Promise<Person> {
  const credentials = { email: "owner@example.org", password: "a long enough password" };
  await post(origin, "/api/auth/setup", credentials, {}, 201);
  const login = await post(origin, "/api/auth/login", credentials, {}, 200);
  const cookie = /lembas_session=[^;]+/.exec(login.response.headers.get("set-cookie") ?? "")?.[0];
  if (!cookie) throw new Error("the login set no session cookie");
  const token = await post<{ token: string }>(origin, "/api/tokens", { name: "e2e script" }, { cookie, origin }, 201);
  return { cookie, apiAuth: `Bearer ${token.body.token}` };
}

/** A device through the whole device login, approved by the signed-in person (`library`: with the library scope). */
export async function loginDevice(
  origin: string,
  person: Person,
  host: string,
  { library = false } = {},
): Promise<LoggedInDevice> {
  const code = await post<{ device_code: string; user_code: string }>(
    origin,
    "/api/devices/authorize",
    { host, platform: "linux" },
    {},
    200,
  );
  await post(
    origin,
    "/api/devices/approve",
    { user_code: code.body.user_code, library },
    { cookie: person.cookie, origin },
    200,
  );
  const token = await post<{ access_token: string; device_id: string; scope: string }>(
    origin,
    "/api/devices/token",
    { device_code: code.body.device_code },
    {},
    200,
  );
  return { deviceId: token.body.device_id, token: token.body.access_token, scope: token.body.scope };
}

/** A person the admin makes and puts on a plan of its own (named by the email's local part), signed in, with an API token. */
export async function personOnPlan(
  origin: string,
  admin: Person,
  email: string,
  plan: Record<string, unknown>,
): Promise<{ auth: string; id: string }> {
  const asAdmin = { authorization: admin.apiAuth };
  const send = async (method: string, route: string, body: unknown, headers: Record<string, string>) => {
    const res = await fetch(`${origin}${route}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return res;
  };
  const planName = email.split("@")[0]!;
  const password = "a long enough password";
  await send("PUT", `/api/admin/plans/${planName}`, plan, asAdmin);
  const { id } = (await (await send("POST", "/api/users", { email, password }, asAdmin)).json()) as { id: string };
  await send("PUT", `/api/admin/accounts/${id}/plan`, { plan: planName }, asAdmin);
  const login = await send("POST", "/api/auth/login", { email, password }, {});
  const cookie = /lembas_session=[^;]+/.exec(login.headers.get("set-cookie") ?? "")![0];
  const made = await send("POST", "/api/tokens", { name: "script" }, { cookie, origin });
  return { auth: ((await made.json()) as { token: string }).token, id };
}
