/**
 * A DevTools protocol session with a Worker's isolate through wrangler dev's inspector: the V8 CPU profile it takes
 * (the Profiler domain), shared by the profiling scripts (bench/profile.ts, bench/profile-setup.ts), and a full
 * garbage collection with the heap left in use (bench/link-stages.ts, before each memory reading).
 */
import WebSocket from "ws";
import { sleep } from "./progress.js";

const SAMPLE_EVERY_US = 100;
/** A collection is asked for, then the isolate entered this often until it ran, for at most COLLECT_WITHIN_MS. */
const ENTER_EVERY_MS = 200;
const COLLECT_WITHIN_MS = 30_000;

export interface CallFrame {
  functionName: string;
  /** The script the function is in (Debugger.getScriptSource gives its text). */
  scriptId: string;
  url: string;
  lineNumber: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/**
 * The time each node of a profile ran itself, in µs: its samples times the sampling interval asked for. Not the
 * samples' time deltas: the isolate is sampled only while it runs, so the first sample after a wait carries the whole
 * wait in its delta (a paced round trip's 25 ms), which would make whatever runs first after a wait look the dearest.
 * On a busy machine the sampler fires later than asked (about every 200 µs for 100 on 2 cores), so the times are low
 * by that much, on both sides alike: compare shares and sides, and take the benchmark's CPU rows for amounts.
 */
export function selfTimes(profile: Profile): Map<number, number> {
  const self = new Map<number, number>();
  for (const id of profile.samples) self.set(id, (self.get(id) ?? 0) + SAMPLE_EVERY_US);
  return self;
}

/**
 * A DevTools protocol session on an inspector: wrangler dev's (its first target: the Worker, objects included), or
 * the runtime's own, which lists every isolate of the process by `target` (bench/idle-memory.ts: the local D1's).
 */
export async function inspector(port: number, target?: string) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
    id: string;
    webSocketDebuggerUrl: string;
  }[];
  const chosen = target === undefined ? targets[0] : targets.find((t) => t.id === target);
  if (!chosen) throw new Error(`no inspector target ${target} on port ${port}`);
  const socket = new WebSocket(chosen.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
  let next = 1;
  const waiting = new Map<number, (result: unknown) => void>();
  socket.on("message", (data) => {
    const message = JSON.parse(data.toString()) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  const send = <T>(method: string, params: unknown = {}) =>
    new Promise<T>((resolve) => {
      const id = next++;
      waiting.set(id, resolve as (result: unknown) => void);
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { send, close: () => socket.close() };
}

/** An inspector session that takes CPU profiles (the Profiler domain, sampling every SAMPLE_EVERY_US). */
export async function devtools(port: number) {
  const { send, close } = await inspector(port);
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: SAMPLE_EVERY_US });
  return {
    async profile(work: () => Promise<void>): Promise<Profile> {
      await send("Profiler.start");
      await work();
      return (await send<{ profile: Profile }>("Profiler.stop")).profile;
    },
    /** Any other method of the protocol (e.g. Debugger.getScriptSource). */
    send,
    close,
  };
}

/** The isolate's heap (Runtime.getHeapUsage, bytes): V8's, the embedder's objects (cppgc), ArrayBuffers' stores. */
export interface HeapUsage {
  usedSize: number;
  totalSize: number;
  embedderHeapUsedSize: number;
  backingStorageSize: number;
}

/**
 * A full garbage collection in the Worker's isolate (HeapProfiler.collectGarbage), then its heap in use. V8 runs the
 * collection as a task of the isolate, which workerd runs only when something next enters the isolate: `enter` (a
 * request to the Worker) is made until the collection has run.
 */
export async function collectedHeap(port: number, enter: () => Promise<unknown>, target?: string): Promise<HeapUsage> {
  const { send, close } = await inspector(port, target);
  try {
    const collected = send("HeapProfiler.collectGarbage").then(() => true);
    const deadline = performance.now() + COLLECT_WITHIN_MS;
    for (;;) {
      await enter();
      if (await Promise.race([collected, sleep(ENTER_EVERY_MS).then(() => false)])) break;
      if (performance.now() > deadline) throw new Error(`no garbage collection within ${COLLECT_WITHIN_MS / 1000} s`);
    }
    return await send<HeapUsage>("Runtime.getHeapUsage");
  } finally {
    close();
  }
}

/**
 * wrangler dev's local D1 runs in isolates of its own in the Worker's runtime process — the binding's entry and the
 * database's object, as the runtime's inspector names them — where every query prepares a SQLite statement kept
 * until its JavaScript object is collected: garbage that a collection of the Worker's isolate leaves, and that a
 * deployed D1, a service of its own, never puts in the Worker's process.
 */
const LOCAL_D1_ISOLATES = ["d1:db:entry", "d1:db"];

/**
 * A full collection in each of the local D1's isolates, through the runtime's own inspector (`port`), entered by
 * `enter` (a request that makes the Worker query D1); the bytes their heaps hold after it.
 */
export async function collectedLocalD1(port: number, enter: () => Promise<unknown>): Promise<number> {
  let used = 0;
  for (const isolate of LOCAL_D1_ISOLATES) {
    const heap = await collectedHeap(port, enter, isolate);
    used += heap.usedSize + heap.embedderHeapUsedSize + heap.backingStorageSize;
  }
  return used;
}
