/**
 * The real Worker under `wrangler dev`, on free ports and a fresh local D1/Durable Object store: started once for
 * a suite, its D1 migrated first, ready when discovery answers, and stopped with its whole process group.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT, tempDir } from "../../bridge/helpers/run-bridge.js";

const WRANGLER = path.join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 5_000;

/** CI=true keeps wrangler from asking anything (migrations apply would otherwise confirm); no metrics either. */
const WRANGLER_ENV = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };

export interface Instance {
  origin: string;
  /** wrangler's output so far, for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

export async function startInstance(): Promise<Instance> {
  const persistTo = await tempDir("persist");
  await promisify(execFile)(process.execPath, [WRANGLER, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persistTo], {
    cwd: ROOT,
    env: WRANGLER_ENV,
    timeout: READY_TIMEOUT_MS,
  });

  const [port, inspectorPort] = [await freePort(), await freePort()];
  const child = spawn(
    process.execPath,
    [
      WRANGLER, "dev",
      "--ip", "127.0.0.1",
      "--port", String(port),
      "--inspector-port", String(inspectorPort),
      "--persist-to", persistTo,
      "--show-interactive-dev-session=false",
    ],
    // Its own process group, so stopping it also stops workerd and the build it started.
    { cwd: ROOT, env: WRANGLER_ENV, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));

  const stop = async () => {
    await stopGroup(child, exited);
    await rm(persistTo, { recursive: true, force: true });
  };
  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitForDiscovery(origin, exited);
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}; wrangler said:\n${output}`);
  }
  return { origin, logs: () => output, stop };
}

async function waitForDiscovery(origin: string, exited: Promise<void>): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (gone) throw new Error("wrangler dev exited before the instance answered");
    const response = await fetch(`${origin}/.well-known/lembas.json`).catch(() => null);
    if (response?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the instance did not answer discovery within ${READY_TIMEOUT_MS / 1000} s`);
}

async function stopGroup(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is gone already.
    }
  };
  signalGroup("SIGTERM");
  const timer = setTimeout(() => signalGroup("SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
  // workerd may outlive wrangler for a moment; the group goes with it.
  signalGroup("SIGKILL");
}

/** A port nobody listens on right now (never 8787, which `npm start` uses). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
