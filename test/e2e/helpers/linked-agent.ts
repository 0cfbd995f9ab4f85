import { expect } from "vitest";
import { runBridge, tempDir, type BridgeRun } from "../../bridge/helpers/run-bridge.js";
import type { Person } from "./accounts.js";

export interface Linked {
  deviceId: string;
  bridge: BridgeRun;
}

/**
 * Logs a bridge in as a device named `name`, approved by `person` as the device page would, and links `agent` through
 * it from `cwd`. The bridge is pushed onto `bridges` as soon as it runs, so the caller's afterAll stops it.
 */
export async function linkAgent(
  origin: string,
  person: Person,
  options: { name: string; agent: string[]; cwd: string; bridges: BridgeRun[]; env?: NodeJS.ProcessEnv },
): Promise<Linked> {
  const configHome = await tempDir(`linked-${options.name.replace(/\W/g, "-")}`);
  const login = runBridge(["login", "--name", options.name, origin], { configHome });
  options.bridges.push(login);
  await login.saw(/shows the code (\S+)/);
  const userCode = /shows the code (\S+)/.exec(login.stderr())![1]!;
  const approved = await fetch(`${origin}/api/devices/approve`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: person.cookie, origin },
    body: JSON.stringify({ user_code: userCode }),
  });
  expect(approved.status).toBe(200);
  const deviceId = ((await approved.json()) as { device_id: string }).device_id;
  expect(await login.exited).toBe(0);
  const bridge = runBridge(["link", "--", process.execPath, ...options.agent], {
    configHome,
    cwd: options.cwd,
    env: options.env ?? {},
  });
  options.bridges.push(bridge);
  await bridge.saw("the link is up");
  return { deviceId, bridge };
}
