/** The instance's JSON HTTP API, from the signed-in browser (the session cookie rides along). */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const data: unknown = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const detail =
      data && typeof data === "object" && "detail" in data
        ? String((data as { detail: unknown }).detail)
        : res.statusText;
    throw new ApiError(res.status, detail);
  }
  return data as T;
}

export interface Me {
  id: string;
  email: string;
  admin: boolean;
}

export interface Device {
  id: string;
  name: string;
  online: boolean;
  last_seen: number | null;
  protocol: number | null;
  host: string | null;
  platform: string | null;
  capabilities: string[] | null;
}

export interface Chat {
  device_id: string;
  session_id: string;
  title: string | null;
  cwd: string | null;
  origin: string;
  busy: boolean | number;
  updated_at: number;
  pending_delete: boolean;
}

export const me = () => api<Me>("GET", "/api/auth/me");
export const signIn = (email: string, password: string) => api<unknown>("POST", "/api/auth/login", { email, password });
export const setup = (email: string, password: string) => api<unknown>("POST", "/api/auth/setup", { email, password });
export const signOut = () => api<unknown>("POST", "/api/auth/logout");
export const devices = () => api<Device[]>("GET", "/api/devices");
export const chats = (deviceId: string) => api<Chat[]>("GET", `/api/chats?device=${encodeURIComponent(deviceId)}`);
export const approveCode = (userCode: string) =>
  api<{ device_id: string; name: string; account: { email: string } }>("POST", "/api/devices/approve", {
    user_code: userCode,
  });
export const denyCode = (userCode: string) => api<unknown>("POST", "/api/devices/deny", { user_code: userCode });
