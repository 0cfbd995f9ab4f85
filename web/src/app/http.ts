/** The instance's JSON HTTP API, from the signed-in browser (the session cookie rides along). */
import type {
  ApprovedDevice,
  ChatInfo,
  DeleteOutcome,
  DeviceInfo,
  ModelList,
  UsageReport,
  UserView,
  WaitingLogin,
} from "../../../src/protocol/http-api";

export type { ChatInfo, DeviceInfo, UsageReport, WaitingLogin };
export type Me = UserView;
export type Model = ModelList["data"][number];

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
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  if (!res.ok) {
    const detail =
      data && typeof data === "object" && "detail" in data ? String(data.detail) : `${res.status} ${res.statusText}`;
    throw new ApiError(res.status, detail);
  }
  return data as T;
}

export const me = () => api<Me>("GET", "/api/auth/me");
export const signIn = (email: string, password: string) => api<Me>("POST", "/api/auth/login", { email, password });
export const setupOpen = () => api<{ open: boolean }>("GET", "/api/auth/setup").then((r) => r.open);
export const setup = (email: string, password: string) => api<Me>("POST", "/api/auth/setup", { email, password });
export const signOut = () => api<null>("POST", "/api/auth/logout");
export const devices = () => api<DeviceInfo[]>("GET", "/api/devices");
export const renameDevice = (id: string, name: string) =>
  api<DeviceInfo>("PATCH", `/api/devices/${encodeURIComponent(id)}`, { name });
export const revokeDevice = (id: string) => api<null>("DELETE", `/api/devices/${encodeURIComponent(id)}`);
export const chats = (deviceId: string) => api<ChatInfo[]>("GET", `/api/chats?device=${encodeURIComponent(deviceId)}`);
export const deleteChat = (deviceId: string, sessionId: string) =>
  api<DeleteOutcome>("DELETE", `/api/chats/${encodeURIComponent(deviceId)}/${encodeURIComponent(sessionId)}`);
export const usage = () => api<UsageReport>("GET", "/api/usage");
export const models = () => api<ModelList>("GET", "/api/models");
export const lookupCode = (userCode: string) =>
  api<WaitingLogin>("POST", "/api/devices/lookup", { user_code: userCode });
/** `library`: whether the device may use the account's library (its token gets the library scope). */
export const approveCode = (userCode: string, library: boolean) =>
  api<ApprovedDevice>("POST", "/api/devices/approve", { user_code: userCode, library });
export const denyCode = (userCode: string) => api<unknown>("POST", "/api/devices/deny", { user_code: userCode });

/** The message of anything thrown, for a person to read. */
export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
