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
  terminate(): void;
}

/** The shell's convention: a program that could not be started exits with 127. */
const NOT_STARTED = 127;

export function startAgent([program, ...args]: readonly [string, ...string[]]): AgentProcess {
  const child = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
  const writer = stream.writable.getWriter();

  // An agent that has exited closes its stdin; writes after that are lost, and nothing can receive them anyway.
  child.stdin.on("error", () => {});

  const exited = new Promise<number>((resolve) => {
    child.once("error", (error) => {
      say(`could not start the agent "${program}": ${error.message}`);
      resolve(NOT_STARTED);
    });
    // "close" (not "exit"): it comes after stdout is drained, so the agent's last messages are read first.
    child.once("close", (code, signal) => {
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });

  return {
    messages: stream.readable,
    // A write after the agent closed its stdin cannot reach it; the exit that follows ends the bridge.
    send: (message) => {
      writer.write(message).catch(() => {});
    },
    exited,
    terminate: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    },
  };
}
