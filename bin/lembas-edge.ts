#!/usr/bin/env node
/** lembas-edge: links any stdio ACP agent to a lembas-edge instance (see --help). */
import { readFileSync } from "node:fs";
import { HELP, parseArgs } from "./bridge/args.js";
import { configDir, findCredential } from "./bridge/config-store.js";
import { link } from "./bridge/link.js";
import { login } from "./bridge/login.js";
import { Stop, say } from "./bridge/log.js";

/** The keep-alive interval the instance expects; the environment may shorten it (tests do). */
const DEFAULT_PING_MS = 30_000;
/** How long the agent has to exit after SIGTERM before its process group is killed; the environment may change it. */
const DEFAULT_STOP_GRACE_MS = 5_000;

async function main(argv: readonly string[]): Promise<number> {
  const command = parseArgs(argv);
  switch (command.kind) {
    case "help":
      process.stdout.write(HELP);
      return 0;
    case "version":
      process.stdout.write(`lembas-edge ${packageVersion()}\n`);
      return 0;
    case "login":
      await login(command.origin, command.name);
      return 0;
    case "link": {
      const credential = await findCredential(configDir(), command.origin);
      return link({
        credential,
        agent: command.agent,
        version: packageVersion(),
        pingMs: positiveMs("LEMBAS_EDGE_PING_MS", DEFAULT_PING_MS),
        stopGraceMs: positiveMs("LEMBAS_EDGE_STOP_GRACE_MS", DEFAULT_STOP_GRACE_MS),
      });
    }
  }
}

function packageVersion(): string {
  // Compiled to dist/bin/, two levels below the package root.
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  return (JSON.parse(text) as { version: string }).version;
}

function positiveMs(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof Stop) {
      say(error.message);
      process.exit(error.exitCode);
    }
    say(`unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
