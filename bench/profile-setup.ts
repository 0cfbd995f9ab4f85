/**
 * `npm run bench:profile-setup`: where the real Worker's CPU goes during link set-ups. Starts the instrumented Worker under
 * wrangler dev (as `npm run bench` does), makes devices through the HTTP API, links some to warm the isolate, then
 * links a burst of fresh devices 16 at a time — first unprofiled, for the workerd CPU per set-up, then again under
 * the V8 sampling profiler of wrangler dev's inspector (the DevTools protocol) — and prints the storage commits
 * and rows of 20 set-ups (counted as `npm run bench` counts them, between the two bursts) and the functions that
 * spent the most CPU, by themselves and with what they called, each with the source module it comes from. The
 * whole profile is written to bench/profiles/relay-link-setups.cpuprofile (open it in Chrome's DevTools).
 *
 * PROFILE_LINKS (default 300) is the size of each burst. The profile covers the Worker's isolate (its routes and
 * the device objects); the local D1 database runs in the same workerd process but another isolate, so its CPU is in
 * the per-set-up figure and not in the profile.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { createDevices, createPerson, type Device } from "./accounts.js";
import { COUNTED, countLinkCommits } from "./commits.js";
import { devtools, selfTimes, type Profile, type ProfileNode } from "./devtools.js";
import { ScriptedDevice } from "./peers.js";
import { inBatches, log, sleep } from "./progress.js";
import { RELAY, ROOT, startDev, type Dev } from "./wrangler-dev.js";

const LINKS = Number(process.env.PROFILE_LINKS ?? 300);
const WARM = 48;
const PARALLEL = 16;
/** Lets the last links' presence writes (sent once the link is up) finish inside the measured stretch. */
const SETTLE_MS = 1_500;
const TOP = 40;

/** Links `devices` 16 at a time, each until the instance's initialize request reached it; then lets them settle. */
async function linkAll(dev: Dev, devices: readonly Device[], linked: ScriptedDevice[]): Promise<void> {
  const batch = await inBatches(devices.length, PARALLEL, async (i) => {
    const device = await ScriptedDevice.link(dev.origin, devices[i]!.token, devices[i]!.id);
    await device.initialized;
    return device;
  });
  linked.push(...batch);
  await sleep(SETTLE_MS);
}

/** The bundle's modules by line: esbuild heads each module's code with a `// <path>` comment. */
function modulesOf(bundle: string, url: string): (line: number) => string {
  const starts: [number, string][] = [];
  bundle.split("\n").forEach((text, line) => {
    const found = /^\/\/ ((?:src|bench|node_modules)\/\S+)$/.exec(text);
    if (found) starts.push([line, found[1]!.replace(/^node_modules\/(\.pnpm\/)?/, "")]);
  });
  return (line) => {
    let name = url;
    for (const [start, module] of starts) {
      if (start > line) break;
      name = module;
    }
    return name;
  };
}

function summarise(profile: Profile, moduleAt: (url: string, line: number) => string, links: number): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = selfTimes(profile);
  const moduleOf = (node: ProfileNode) =>
    node.callFrame.url ? moduleAt(node.callFrame.url, node.callFrame.lineNumber) : "(native)";
  const keyOf = (node: ProfileNode) => `${node.callFrame.functionName || "(anonymous)"}  [${moduleOf(node)}]`;
  /** The nearest caller in the project's own code (the bench's wrappers skipped): where a native call came from. */
  const callerOf = (id: number) => {
    for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
      const node = byId.get(at)!;
      if (moduleOf(node).startsWith("src/")) return keyOf(node);
    }
    return "(no caller of ours)";
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const byModule = new Map<string, number>();
  const nativeBy = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const key = keyOf(node);
    self.set(key, (self.get(key) ?? 0) + us);
    const module = node.callFrame.url ? moduleOf(node) : node.callFrame.functionName;
    byModule.set(module, (byModule.get(module) ?? 0) + us);
    if (!node.callFrame.url && node.callFrame.functionName && !node.callFrame.functionName.startsWith("(")) {
      const native = `${node.callFrame.functionName} ← ${callerOf(id)}`;
      nativeBy.set(native, (nativeBy.get(native) ?? 0) + us);
    }
    // Inclusive: each distinct function on the sample's stack once (recursion counted once).
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const onStack = keyOf(byId.get(at)!);
      if (seen.has(onStack)) continue;
      seen.add(onStack);
      total.set(onStack, (total.get(onStack) ?? 0) + us);
    }
  }
  const all = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = self.get("(idle)  [(native)]") ?? 0;
  const busy = all - idle;
  const row = ([key, us]: [string, number]) =>
    `${(us / 1000 / links).toFixed(3).padStart(8)} ms  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${key}`;
  const top = (map: Map<string, number>, n: number) =>
    [...map]
      .filter(([key]) => !key.startsWith("(idle)") && !key.startsWith("(root)"))
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(row)
      .join("\n");
  return [
    `sampled ${(all / 1e6).toFixed(2)} s, of it busy ${(busy / 1e6).toFixed(2)} s: ${(busy / 1000 / links).toFixed(2)} ms of the isolate's CPU per set-up (${links} set-ups)`,
    "",
    "per set-up  share  by module (self time)",
    top(byModule, 25),
    "",
    "per set-up  share  native calls (SQL, D1, crypto, …) by the code of ours that made them",
    top(nativeBy, TOP),
    "",
    "per set-up  share  by function, self time",
    top(self, TOP),
    "",
    "per set-up  share  by function, with what it called",
    top(total, TOP),
  ].join("\n");
}

async function main(): Promise<void> {
  log("starting the real Worker under wrangler dev");
  const relay = await startDev(RELAY);
  const linked: ScriptedDevice[] = [];
  try {
    const person = await createPerson(relay.origin);
    const made = WARM + 2 * LINKS + COUNTED.links;
    log(`making ${made} devices through the HTTP API`);
    const devices = await createDevices(relay.origin, person, made, PARALLEL);
    log(`warming up: ${WARM} links`);
    await linkAll(relay, devices.slice(0, WARM), linked);

    log(`${LINKS} fresh links, unprofiled`);
    const cpuBefore = relay.cpuMs();
    const started = performance.now();
    await linkAll(relay, devices.slice(WARM, WARM + LINKS), linked);
    const seconds = (performance.now() - started - SETTLE_MS) / 1000;
    const cpuPerLink = (relay.cpuMs() - cpuBefore) / LINKS;

    // As `npm run bench` counts them: one at a time, each watched by its owner's client socket.
    const counted = await countLinkCommits(relay.origin, person, devices.slice(WARM + 2 * LINKS));
    await sleep(SETTLE_MS);

    log(`${LINKS} fresh links, profiled`);
    const inspector = await devtools(relay.inspectorPort);
    const profile = await inspector.profile(() =>
      linkAll(relay, devices.slice(WARM + LINKS, WARM + 2 * LINKS), linked),
    );
    // The scripts' sources, to name each function's module (the bundle heads each module with a `// path` line).
    await inspector.send("Debugger.enable");
    const sources = new Map<string, (line: number) => string>();
    for (const node of profile.nodes) {
      const { url, scriptId } = node.callFrame;
      if (!url || sources.has(url)) continue;
      // No source (an error answer): the functions are named by the script's URL.
      const source = await inspector.send<{ scriptSource?: string } | undefined>("Debugger.getScriptSource", {
        scriptId,
      });
      sources.set(url, source?.scriptSource ? modulesOf(source.scriptSource, url) : () => url);
    }
    await inspector.send("Debugger.disable");
    inspector.close();

    const out = path.join(ROOT, "bench/profiles");
    await mkdir(out, { recursive: true });
    const file = path.join(out, "relay-link-setups.cpuprofile");
    await writeFile(file, JSON.stringify(profile));
    const moduleAt = (url: string, line: number) => sources.get(url)?.(line) ?? url;
    process.stdout.write(
      `unprofiled: ${LINKS} set-ups in ${seconds.toFixed(1)} s (${Math.round(LINKS / seconds)}/s, ${PARALLEL} at a time), workerd CPU ${cpuPerLink.toFixed(2)} ms a set-up\n\n`,
    );
    const { units, tally } = counted;
    const per = (n: number) => (n / units).toFixed(2);
    process.stdout.write(
      [
        `commits per link set-up (${units} counted): holding output ${per(tally.holding)} / all ${per(tally.commits)}; rows written ${per(tally.rowsWritten)}`,
        ...Object.entries(tally.shapes)
          .sort((a, b) => b[1] - a[1])
          .map(([shape, n]) => `  ${per(n)}  ${shape}`),
        "",
        "",
      ].join("\n"),
    );
    process.stdout.write(`${summarise(profile, moduleAt, LINKS)}\n\nthe whole profile: ${file}\n`);
  } finally {
    await Promise.all(linked.map((device) => device.close()));
    await relay.stop();
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  log(`profile failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
