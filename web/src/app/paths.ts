/** The app's paths, built in one place (routes.tsx matches them). */
export const devicePath = (deviceId: string) => `/devices/${encodeURIComponent(deviceId)}`;
export const chatPath = (deviceId: string, sessionId: string) =>
  `${devicePath(deviceId)}/chats/${encodeURIComponent(sessionId)}`;
