/**
 * The command line: `login [--name NAME] <instance-url>`, `link [--instance URL] -- <agent command…>`, `--help`,
 * `--version`.
 */
import { Stop } from "./log.js";

export type Command =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "login"; origin: string; name: string | null }
  | { kind: "link"; origin: string | null; agent: [string, ...string[]] };

/** Usage mistakes exit with 2, like most command-line tools. */
const USAGE_EXIT = 2;

export const HELP = `lembas-edge — link any stdio ACP agent to a lembas-edge instance

Usage:
  lembas-edge login [--name <name>] <instance-url>
      Log this machine in to the instance with the device flow (RFC 8628): prints a code and the
      address where a signed-in person approves it, waits for the approval, then keeps the device
      token in $XDG_CONFIG_HOME/lembas-edge/credentials.json (~/.config when unset), readable by
      you alone. --name names the device in the instance's lists (default: this machine's host
      name), so several agents on one machine can be told apart.

  lembas-edge link [--instance <instance-url>] -- <agent command> [args…]
      Start the agent (it speaks ACP on stdin/stdout, its stderr shows here) and link it to the
      instance, which then drives it from the browser. The link is redialled when it drops
      (1 s doubling to 30 s, with jitter) while the agent keeps running. --instance picks one
      of several logins; with a single login it may be left out. Exits with the agent's exit code.

  lembas-edge --help | --version

Environment:
  XDG_CONFIG_HOME       where credentials.json lives (default ~/.config)
  LEMBAS_EDGE_PING_MS   keep-alive interval on the link in milliseconds (default 30000)

Example:
  lembas-edge login http://127.0.0.1:8787
  lembas-edge login --name codex http://127.0.0.1:8787
  lembas-edge link -- npx my-acp-agent --stdio
`;

/** The instance's origin: the key of its login and the base of every address the bridge derives. */
export function instanceOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Stop(`"${text}" is not an instance address; give one like http://127.0.0.1:8787`, USAGE_EXIT);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Stop(`the instance address must start with http:// or https:// (got "${text}")`, USAGE_EXIT);
  }
  return url.origin;
}

export function parseArgs(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") return { kind: "help" };
  if (first === "--version" || first === "-v") return { kind: "version" };
  if (first === "login") return parseLogin(rest);
  if (first === "link") return parseLink(rest);
  throw new Stop(`unknown command "${first}"; see lembas-edge --help`, USAGE_EXIT);
}

/** The longest device name the instance takes. */
const NAME_MAX = 100;

function parseLogin(args: readonly string[]): Command {
  const usage = () => new Stop("usage: lembas-edge login [--name <name>] <instance-url>", USAGE_EXIT);
  let name: string | null = null;
  let url: string | null = null;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    let value: string | undefined;
    if (arg === "--name") value = args[++i];
    else if (arg.startsWith("--name=")) value = arg.slice("--name=".length);
    else if (arg.startsWith("-") || url !== null) throw usage();
    else {
      url = arg;
      continue;
    }
    name = value?.trim() ?? "";
    if (name === "" || name.length > NAME_MAX) {
      throw new Stop(`--name needs a name of 1 to ${NAME_MAX} characters`, USAGE_EXIT);
    }
  }
  if (url === null) throw usage();
  return { kind: "login", origin: instanceOrigin(url), name };
}

function parseLink(args: readonly string[]): Command {
  let origin: string | null = null;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      i++;
      break;
    }
    if (arg === "--instance") {
      const value = args[++i];
      if (value === undefined) throw new Stop("--instance needs an instance address", USAGE_EXIT);
      origin = instanceOrigin(value);
    } else if (arg.startsWith("--instance=")) {
      origin = instanceOrigin(arg.slice("--instance=".length));
    } else if (arg.startsWith("-")) {
      throw new Stop(`unknown option "${arg}" for link; put the agent's command after --`, USAGE_EXIT);
    } else {
      break;
    }
  }
  const [program, ...programArgs] = args.slice(i);
  if (program === undefined) {
    throw new Stop("usage: lembas-edge link [--instance <instance-url>] -- <agent command> [args…]", USAGE_EXIT);
  }
  return { kind: "link", origin, agent: [program, ...programArgs] };
}
