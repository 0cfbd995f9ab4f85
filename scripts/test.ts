/**
 * `npm test`: the web UI built once, then the workerd suite and the Node suite side by side. The Node side mostly
 * waits on its instances, browsers and peers, so the two fit on 2 cores in little more than the Node side's time.
 * The Node suite's output streams; the workerd suite's is printed whole when it ends, so their lines never mix.
 */
import { spawn } from "node:child_process";
import path from "node:path";

/** Tells the Node suite's global setup the web UI is built: rebuilding it empties the folder the workerd suite's
 * assets are read from, while that suite runs. */
export const WEB_BUILT_ENV = "LEMBAS_EDGE_WEB_BUILT";

export interface SuiteRun {
  ms: number;
  ok: boolean;
}

function run(root: string, args: string[], buffered: boolean): Promise<SuiteRun> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, [WEB_BUILT_ENV]: "1" },
      stdio: buffered ? ["ignore", "pipe", "pipe"] : "inherit",
    });
    const output: Buffer[] = [];
    child.stdout?.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => output.push(chunk));
    child.once("close", (code) => {
      if (buffered) process.stdout.write(Buffer.concat(output));
      resolve({ ms: performance.now() - started, ok: code === 0 });
    });
  });
}

/** Both suites of the repository at `root`, side by side, after one web build; each one's wall time and verdict. */
export async function runSuites(root: string): Promise<{ workerd: SuiteRun; node: SuiteRun }> {
  const vitest = path.join(root, "node_modules/vitest/vitest.mjs");
  const web = await run(root, [path.join(root, "scripts/build-web.ts")], false);
  if (!web.ok) return { workerd: web, node: web };
  const workerd = run(root, [vitest, "run"], true).then((result) => {
    console.log(`\nthe workerd suite ${result.ok ? "passed" : "FAILED"} in ${(result.ms / 1000).toFixed(0)} s\n`);
    return result;
  });
  const node = run(root, [vitest, "run", "-c", "vitest.node.config.ts"], false);
  return { workerd: await workerd, node: await node };
}

// Run as `npm test`, not when bundled into the bench's suite timer (then the bundle is both argv[1] and this file).
if (process.argv[1] === import.meta.filename && path.basename(import.meta.filename) === "test.ts") {
  const { workerd, node } = await runSuites(path.resolve(import.meta.dirname, ".."));
  console.log(
    `workerd suite: ${workerd.ok ? "passed" : "FAILED"} (${(workerd.ms / 1000).toFixed(0)} s); ` +
      `Node suite: ${node.ok ? "passed" : "FAILED"} (${(node.ms / 1000).toFixed(0)} s)`,
  );
  process.exitCode = workerd.ok && node.ok ? 0 : 1;
}
