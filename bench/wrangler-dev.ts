/**
 * Runs a Worker under `wrangler dev` for the benchmark: loopback, free ports, a fresh --persist-to directory
 * (its D1 migrated first when asked) or a given one kept as it is, ready when a probe URL answers. Unlike the end-to-end tests' instance it can
 * run another entry point or config (the instrumented Worker, the baseline) and finds the workerd process that runs
 * the Worker, so its memory can be read.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { experimental_readRawConfig } from "wrangler";
import { childrenOf, cpuMs, openFileTargets } from "./proc.js";

/** The repository: the nearest directory up from here whose package.json is lembas-edge's (works bundled too). */
export const ROOT = (() => {
  for (let dir = import.meta.dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, "package.json");
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "lembas-edge"
    )
      return dir;
  }
  throw new Error("the benchmark must run inside the lembas-edge repository");
})();

export const WRANGLER = path.join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const READY_WITHIN_MS = 180_000;
const OPEN_FILES = 65_536;
const STOP_GRACE_MS = 5_000;
/**
 * Two things wrangler dev does on the runtime's one thread that a deployed Worker does not, and that weigh on the
 * side that does more: its local observability (every event's trace
 * sent to a collector that writes it to SQLite), and an fsync for every SQLite commit — the objects', the alarms',
 * D1's, the traces' — on a disk. The bench turns the first off and keeps each run's state in memory (tmpfs) where
 * the machine has one. BENCH_DEV_DEFAULTS=1 keeps wrangler dev's defaults, to measure what they cost.
 */
const DEV_DEFAULTS = process.env.BENCH_DEV_DEFAULTS === "1";
const STATE_ROOT = !DEV_DEFAULTS && existsSync("/dev/shm") ? "/dev/shm" : tmpdir();

/** CI=true keeps wrangler from asking anything; no metrics. */
export const WRANGLER_ENV = {
  ...process.env,
  CI: "true",
  WRANGLER_SEND_METRICS: "false",
  NO_COLOR: "1",
  ...(DEV_DEFAULTS ? {} : { X_LOCAL_OBSERVABILITY: "false" }),
};

/** Where the run's Workers keep their state, and whether wrangler dev's local observability is on. */
export const HARNESS = { stateIn: STATE_ROOT, localObservability: DEV_DEFAULTS } as const;

export interface DevOptions {
  /** For progress lines and errors. */
  label: string;
  /** A wrangler config other than the repository's. */
  config?: string;
  /**
   * Run this entry point with the repository's config, built once before starting: wrangler dev then watches only
   * the built copy, so files others edit during the run cannot reload the Worker and cut its sockets.
   */
  snapshotOf?: string;
  migrateD1?: boolean;
  /** With `snapshotOf`: serve the web UI's built assets (web/public) too, as a deployed Worker does. */
  assets?: boolean;
  /**
   * A state folder whose D1 is migrated already (`migratedD1`): a fresh instance starts on a copy of it instead of
   * running the migrations (a wrangler process of its own, seconds on a busy machine).
   */
  d1From?: string;
  /** A path that answers 2xx/4xx once the Worker runs. */
  probe: string;
  /**
   * Run on this state folder (D1, Durable Objects) instead of a fresh one, and leave it on stop: an instance killed
   * and started again on it finds what the last one stored.
   */
  persistTo?: string;
  /** `[vars]` to set for this run (`--var NAME:VALUE`), over the config's. */
  vars?: Record<string, string>;
  /**
   * Talk to the runtime's own entry socket instead of wrangler's proxy on the public port. The proxy is a
   * development artefact (no such hop in production) and holds about four open files for every socket: past ~4,500
   * links it alone meets a 20,000-file limit that cannot be raised here, while the runtime holds two a link.
   */
  pastProxy?: boolean;
}

export interface Dev {
  origin: string;
  /** wrangler's DevTools inspector port (CPU profiles, garbage collections: bench/devtools.ts). */
  inspectorPort: number;
  /** A path the Worker itself answers (its readiness probe). */
  probe: string;
  /** The workerd process that runs the Worker (wrangler dev also runs a second workerd: its proxy in front). */
  workerdPid(): number;
  /** CPU time that process has used so far (ms). */
  cpuMs(): number;
  /** Both workerd processes, the proxy in front and the runtime (each holds files for every socket). */
  workerdPids(): number[];
  /** Whether wrangler reloaded the Worker since it was ready (a source file changed): open sockets were cut. */
  reloaded(): boolean;
  logs(): string;
  /**
   * Stops wrangler and starts the same build again on the same state: a runtime fresh as a new process is, which
   * finds what the last one stored. This Dev is done with; use the one returned.
   */
  restart(): Promise<Dev>;
  stop(): Promise<void>;
  /** Kills wrangler and its workerd processes at once (SIGKILL to the group), as a crash would; the state stays. */
  kill(): Promise<void>;
}

/**
 * The real Worker as the benchmark runs it (the instrumented build, D1 migrated), with the limits lifted that one
 * person logging in thousands of devices from one address would meet, far past what a person does.
 */
export const RELAY: DevOptions = {
  label: "relay",
  pastProxy: true,
  snapshotOf: "bench/instrumented/worker.ts",
  migrateD1: true,
  probe: "/.well-known/lembas.json",
  vars: {
    // Approvals run 16 at a time: a back-off counts each before it is tried.
    RATE_LIMITS: JSON.stringify({
      authorize_address: { burst: 1_000_000 },
      approval_person: { free: 1_000_000 },
      approval_address: { free: 1_000_000 },
    }),
    QUOTAS: JSON.stringify({ devices: 1_000_000 }),
    // Other link caps than the defaults, for measuring what a cap costs.
    ...(process.env.BENCH_LINK_CAPS ? { LINK_CAPS: process.env.BENCH_LINK_CAPS } : {}),
  },
};

/** The bare Durable Object the relay is measured against, reached the same way. */
export const BASELINE: DevOptions = {
  label: "baseline",
  config: path.join(ROOT, "bench/baseline/wrangler.toml"),
  probe: "/",
  pastProxy: true,
};

export async function startDev(options: DevOptions): Promise<Dev> {
  const work = await mkdtemp(path.join(STATE_ROOT, `lembas-edge-bench-${options.label}-`));
  const persistTo = options.persistTo ?? path.join(work, "state");
  const config = options.snapshotOf
    ? await snapshot(options.snapshotOf, work, options.assets === true)
    : options.config;
  if (options.migrateD1) {
    const fresh = !existsSync(persistTo) || readdirSync(persistTo).length === 0;
    if (options.d1From && fresh) await cp(options.d1From, persistTo, { recursive: true });
    else await migrateD1(persistTo, config);
  }
  return launch(options, { work, config, persistTo });
}

/** wrangler dev on a prepared build and state (startDev), until stopped or restarted. */
async function launch(
  options: DevOptions,
  prepared: { work: string; config: string | undefined; persistTo: string },
  attempt = 1,
): Promise<Dev> {
  const { work, config, persistTo } = prepared;
  const configArgs = config ? ["--config", config] : [];
  const [port, inspectorPort] = [await freePort(), await freePort()];
  const child = spawn(
    "/bin/sh",
    [
      "-c",
      // wrangler's proxy holds about four files for every socket: thousands of idle links need more than a usual
      // default of open files. Raised where allowed; otherwise left as it is.
      `ulimit -n ${OPEN_FILES} 2>/dev/null; exec "$0" "$@"`,
      process.execPath,
      WRANGLER,
      "dev",
      ...configArgs,
      ...(options.snapshotOf ? ["--no-bundle"] : []),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspectorPort),
      "--persist-to",
      persistTo,
      "--show-interactive-dev-session=false",
      ...Object.entries(options.vars ?? {}).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    ],
    // Its own process group, so stopping it stops workerd and any build it started.
    { cwd: ROOT, env: WRANGLER_ENV, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  let readyAt = -1;
  const collect = (chunk: Buffer) => (output += chunk.toString());
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  // Once restarted, the build and state belong to the new instance: stopping this one leaves them.
  let handedOver = false;
  const stop = async () => {
    await stopGroup(child, exited);
    if (!handedOver) await rm(work, { recursive: true, force: true });
  };
  const restart = async () => {
    await stopGroup(child, exited);
    const next = await launch(options, prepared);
    handedOver = true;
    return next;
  };
  const kill = async () => {
    signalGroup(child, "SIGKILL");
    await exited;
    if (!handedOver) await rm(work, { recursive: true, force: true });
  };
  const publicOrigin = `http://127.0.0.1:${port}`;
  // Found when first asked (the bench asks once both Workers run), then remembered.
  let runtime: number | undefined;
  let workerds: number[] | undefined;
  const runtimePid = () => (runtime ??= workerOf(child.pid!, port, options.label));
  let origin = publicOrigin;
  try {
    await waitUntilAnswering(`${publicOrigin}${options.probe}`, exited);
    // A port found free can be taken before wrangler binds it (by another runtime's ephemeral socket): then another
    // Worker answered the probe, and this one must start again on other ports.
    if (!listenedByAny([child.pid!, ...descendants(child.pid!).map((p) => p.pid)], port)) throw new PortTaken(port);
    if (options.pastProxy) origin = await entryOf(runtimePid(), publicOrigin, options.probe);
  } catch (error) {
    if (error instanceof PortTaken && attempt < LAUNCH_ATTEMPTS) {
      await stopGroup(child, exited);
      return launch(options, prepared, attempt + 1);
    }
    await stop();
    throw new Error(`${options.label}: ${(error as Error).message}; wrangler said:\n${output}`);
  }
  readyAt = output.length;
  return {
    origin,
    inspectorPort,
    probe: options.probe,
    workerdPid: runtimePid,
    workerdPids: () =>
      (workerds ??= descendants(child.pid!)
        .filter((p) => p.comm === "workerd")
        .map((p) => p.pid)),
    cpuMs: () => cpuMs(runtimePid()),
    reloaded: () => /reload/i.test(output.slice(readyAt)),
    logs: () => output,
    restart,
    stop,
    kill,
  };
}

/** Applies the D1 migrations to the local database in a state folder (idempotent), as `npm start` does. */
export async function migrateD1(persistTo: string, config?: string): Promise<void> {
  await promisify(execFile)(
    process.execPath,
    [
      WRANGLER,
      "d1",
      "migrations",
      "apply",
      "DB",
      "--local",
      "--persist-to",
      persistTo,
      ...(config ? ["--config", config] : []),
    ],
    { cwd: ROOT, env: WRANGLER_ENV, timeout: READY_WITHIN_MS },
  );
}

/**
 * Writes the repository's config into `dir` without its build step (the caller built the web UI, or needs no
 * assets), its paths made absolute; `main` replaces the entry point. Returns the config's path.
 */
export async function configWithoutBuild(
  dir: string,
  changes: { main?: string; assets?: false } = {},
): Promise<string> {
  const { rawConfig } = experimental_readRawConfig({ config: path.join(ROOT, "wrangler.toml") });
  const { build: _build, assets, ...rest } = rawConfig;
  const built = {
    ...rest,
    main: changes.main ?? path.join(ROOT, rest.main ?? "src/index.ts"),
    ...(assets && changes.assets !== false
      ? { assets: { ...assets, directory: path.join(ROOT, assets.directory ?? "web/public") } }
      : {}),
    d1_databases: rest.d1_databases?.map((db: { migrations_dir?: string }) => ({
      ...db,
      migrations_dir: path.join(ROOT, db.migrations_dir ?? "migrations"),
    })),
  };
  const file = path.join(dir, "wrangler.json");
  await writeFile(file, JSON.stringify(built, null, 2));
  return file;
}

/**
 * Bundles `script` for workerd (as wrangler does: esbuild, ES module, the workerd/worker/browser export conditions,
 * cloudflare:* left to the runtime) into `work`, and writes a config beside it that runs that bundle with the
 * repository's bindings: no build step, static assets only when asked (the web UI's stage; the others ask only the
 * Worker's routes), the D1 migrations where they are.
 */
async function snapshot(script: string, work: string, assets: boolean): Promise<string> {
  const bundle = path.join(work, "bundle", "worker.js");
  await promisify(execFile)(
    path.join(ROOT, "node_modules/.bin/esbuild"),
    [
      script,
      "--bundle",
      "--format=esm",
      "--platform=neutral",
      "--conditions=workerd,worker,browser",
      "--main-fields=module,main",
      "--external:cloudflare:*",
      "--log-level=warning",
      `--outfile=${bundle}`,
    ],
    { cwd: ROOT, timeout: READY_WITHIN_MS },
  );
  return configWithoutBuild(work, { main: bundle, ...(assets ? {} : { assets: false as const }) });
}

/**
 * wrangler dev runs two workerd processes: a proxy listening on the public port, and the runtime of the Worker
 * itself (its entry socket on an ephemeral port). The Durable Objects live in the second.
 */
function workerOf(wranglerPid: number, publicPort: number, label: string): number {
  const runtimes = descendants(wranglerPid).filter(
    (p) => p.comm === "workerd" && !p.cmdline.includes(`entry=127.0.0.1:${publicPort}`),
  );
  if (runtimes.length !== 1)
    throw new Error(`${label}: expected one workerd running the Worker, found ${runtimes.length}`);
  return runtimes[0]!.pid;
}

/**
 * The runtime's entry socket: of the ports the runtime listens on (its entry, its inspector, its debug port, all
 * ephemeral), the one that answers the probe with the public port's status and content type.
 */
async function entryOf(runtimePid: number, publicOrigin: string, probe: string): Promise<string> {
  const answer = async (origin: string) => {
    const response = await fetch(`${origin}${probe}`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
    // Not the body: the relay's discovery document names the origin it was asked at.
    return response ? `${response.status} ${response.headers.get("content-type")}` : null;
  };
  const expected = await answer(publicOrigin);
  for (const port of listeningPorts(runtimePid)) {
    const origin = `http://127.0.0.1:${port}`;
    if ((await answer(origin)) === expected) return origin;
  }
  throw new Error(`no port of workerd ${runtimePid} answers ${probe} as ${publicOrigin} does`);
}

const LAUNCH_ATTEMPTS = 3;

class PortTaken extends Error {
  constructor(port: number) {
    super(`port ${port} was answered by a process other than this wrangler dev`);
  }
}

/**
 * The runtime's own inspector port, which lists every isolate of the process (wrangler's lists only the Worker's):
 * the one of its ports whose target list names the Worker's isolate.
 */
export async function runtimeInspectorPort(runtimePid: number): Promise<number> {
  for (const port of listeningPorts(runtimePid)) {
    const list = await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(5_000) })
      .then((response) => response.text())
      .catch(() => "");
    if (list.includes('"core:user:')) return port;
  }
  throw new Error(`no port of workerd ${runtimePid} is its inspector`);
}

/** Whether one of these processes listens on the port (a process gone meanwhile listens on nothing). */
function listenedByAny(pids: number[], port: number): boolean {
  return pids.some((pid) => {
    try {
      return listeningPorts(pid).includes(port);
    } catch {
      return false;
    }
  });
}

/** TCP ports the process listens on: its sockets' inodes matched against the kernel's table of IPv4 listeners. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const target of openFileTargets(pid)) {
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const LISTEN = "0A";
  return readFileSync(`/proc/${pid}/net/tcp`, "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[3] === LISTEN && inodes.has(fields[9] ?? ""))
    .map((fields) => Number.parseInt(fields[1]!.split(":")[1]!, 16));
}

function descendants(pid: number): { pid: number; comm: string; cmdline: string }[] {
  const found = [];
  for (const child of childrenOf(pid)) found.push(child, ...descendants(child.pid));
  return found;
}

async function waitUntilAnswering(url: string, exited: Promise<void>): Promise<void> {
  let gone = false;
  exited.then(
    () => {
      gone = true;
    },
    () => {
      gone = true;
    },
  );
  const deadline = Date.now() + READY_WITHIN_MS;
  while (Date.now() < deadline) {
    if (gone) throw new Error("wrangler dev exited before the Worker answered");
    const response = await fetch(url).catch(() => null);
    if (response && response.status < 500) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the Worker did not answer ${url} within ${READY_WITHIN_MS / 1000} s`);
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // The group is gone already.
  }
}

async function stopGroup(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
  signalGroup(child, "SIGKILL");
}

/** A port nobody listens on right now (never 8787, which `npm start` uses). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
