/** Runs the compiled bridge as a person would, with its own config directory, capturing stdout and stderr. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { TEMP_ROOT_ENV } from "../temp-root.js";

export const ROOT = path.resolve(import.meta.dirname, "../../..");
export const BRIDGE = path.join(ROOT, "dist/bin/lembas-edge.js");
/** The runnable example agent of ACP SDK 1.9: text chunks, tool calls, a permission request, cancel. */
export const EXAMPLE_AGENT = path.join(ROOT, "node_modules/acp-sdk-1-9/dist/examples/agent.js");

export interface BridgeRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the bridge has exited. */
  exited: Promise<number | null>;
  /** Resolves once stderr contains `text`. */
  saw(text: string | RegExp, timeoutMs?: number): Promise<void>;
}

/** A fresh directory under the run's temporary root (removed when the run ends). */
export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(process.env[TEMP_ROOT_ENV] ?? tmpdir(), `lembas-edge-${prefix}-`));
}

export function runBridge(
  args: string[],
  options: { configHome: string; cwd?: string; env?: NodeJS.ProcessEnv },
): BridgeRun {
  const child = spawn(process.execPath, [BRIDGE, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, XDG_CONFIG_HOME: options.configHome, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
    for (const check of waiters) check();
  });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    saw: (text, timeoutMs = 20_000) =>
      new Promise<void>((resolve, reject) => {
        const matches = () => (typeof text === "string" ? err.includes(text) : text.test(err));
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`stderr never showed ${String(text)}; it was:\n${err}`));
        }, timeoutMs);
        const check = () => {
          if (!matches()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
  };
}

/** Stops a bridge still running at the end of a test, and waits for it. */
export async function stopBridge(run: BridgeRun): Promise<void> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGTERM");
  await run.exited;
}
