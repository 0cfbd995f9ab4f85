/** The stdio ACP agent the bridge links: its stdin/stdout carry ACP one JSON message a line; its stderr is ours. */
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { Readable, Writable } from "node:stream";
import { ndJsonStream, type AnyMessage } from "@agentclientprotocol/sdk";
import { say } from "./log.js";

export interface AgentProcess {
  /** Messages the agent writes, one per line of its stdout. */
  readonly messages: ReadableStream<AnyMessage>;
  /** Queues a message for the agent's stdin; never fails (see below). */
  send(message: AnyMessage): void;
  /** Resolves with the agent's exit code once it has exited and its output is drained. */
  readonly exited: Promise<number>;
  /**
   * Stops the agent and everything it started: its stdin closed, SIGTERM to its process group, SIGKILL to the
   * group after `graceMs` (`exited` tells when it has). Again while stopping: SIGKILL at once.
   */
  stop(graceMs: number): void;
}

/** The shell's convention: a program that could not be started exits with 127. */
const NOT_STARTED = 127;
/** How long the output of an agent that exited may stay open (held by a process it started) before that is killed. */
const LEFTOVER_GRACE_MS = 2_000;

export function startAgent([program, ...args]: readonly [string, ...string[]]): AgentProcess {
  // Its own process group: an agent installed through npm runs under a launcher, and the native agent it starts
  // (our grandchild) holds the stdout we read. Signalling the group reaches both.
  const child = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"], detached: true });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
  const writer = stream.writable.getWriter();

  // An agent that has exited closes its stdin; writes after that are lost, and nothing can receive them anyway.
  child.stdin.on("error", () => {});

  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // ESRCH: the whole group is gone already.
    }
  };

  let closed = false;
  // Cleared once the agent is gone: its group's id may be reused by then.
  let killTimer: NodeJS.Timeout | undefined;
  const exited = new Promise<number>((resolve) => {
    child.once("error", (error) => {
      say(`could not start the agent "${program}": ${error.message}`);
      closed = true;
      resolve(NOT_STARTED);
    });
    // "close" (not "exit"): it comes after stdout is drained, so the agent's last messages are read first.
    child.once("close", (code, signal) => {
      closed = true;
      clearTimeout(killTimer);
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
  // The agent exited but something it started still holds its stdout: that is stopped too, or "close" never comes.
  child.once("exit", () => {
    setTimeout(() => {
      if (!closed) signalGroup("SIGKILL");
    }, LEFTOVER_GRACE_MS).unref();
  });

  let stopping = false;
  return {
    messages: stream.readable,
    // A write after the agent closed its stdin cannot reach it; the exit that follows ends the bridge.
    send: (message) => {
      writer.write(message).catch(() => {});
    },
    exited,
    stop: (graceMs) => {
      if (closed) return;
      if (stopping) return signalGroup("SIGKILL");
      stopping = true;
      child.stdin.end();
      signalGroup("SIGTERM");
      killTimer = setTimeout(() => signalGroup("SIGKILL"), graceMs);
    },
  };
}
