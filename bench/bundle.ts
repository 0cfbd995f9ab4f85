/**
 * The Worker bundle as it would be deployed: `wrangler deploy --dry-run --outdir <tmp> --minify` with the
 * repository's config (its build step included; nothing is uploaded), and the size of the script it wrote.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { ROOT, WRANGLER, WRANGLER_ENV } from "./wrangler-dev.js";

export interface BundleSize {
  /** The minified Worker script (the .js wrangler would upload; its source map is not counted). */
  bytes: number;
  gzipBytes: number;
}

const BUILD_WITHIN_MS = 180_000;

export async function measureBundle(): Promise<BundleSize> {
  const out = await mkdtemp(path.join(tmpdir(), "lembas-edge-bench-bundle-"));
  try {
    await promisify(execFile)(process.execPath, [WRANGLER, "deploy", "--dry-run", "--outdir", out, "--minify"], {
      cwd: ROOT,
      env: WRANGLER_ENV,
      timeout: BUILD_WITHIN_MS,
    });
    const scripts = (await readdir(out)).filter((name) => name.endsWith(".js"));
    if (scripts.length !== 1) throw new Error(`the dry run wrote ${scripts.length} scripts: ${scripts.join(", ")}`);
    const script = await readFile(path.join(out, scripts[0]!));
    return { bytes: script.length, gzipBytes: gzipSync(script).length };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
