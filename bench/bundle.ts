/**
 * The Worker bundle as it is deployed: `wrangler deploy --dry-run --outdir <tmp>` with the repository's config
 * alone (its `minify`, its build step included; nothing is uploaded), the size of the script it wrote, and where
 * those bytes come from — read from the esbuild metafile of that same build (`--metafile`), by package and by
 * folder of our own code.
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
  /** The script's bytes by origin (a package, or a folder of src/), largest first. */
  parts: BundlePart[];
}

export interface BundlePart {
  /** A package's name, or `src/<folder>` (`src` for the files directly in it). */
  from: string;
  bytes: number;
}

interface Metafile {
  outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
}

/** The package or folder of src/ an input of the metafile (a path relative to the repository) belongs to. */
function originOf(input: string): string {
  const pkg = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (pkg) return pkg[1]!;
  const [top, folder, rest] = input.split("/");
  if (top !== "src") return input;
  return rest === undefined ? "src" : `src/${folder}`;
}

/** The script's bytes by origin; what no input accounts for (the bundler's own glue, license comments) last. */
function partsOf(metafile: Metafile, script: string, scriptBytes: number): BundlePart[] {
  const output = Object.entries(metafile.outputs).find(([name]) => path.basename(name) === script)?.[1];
  if (!output) throw new Error(`the metafile does not describe ${script}`);
  const bytes = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const from = originOf(input);
    bytes.set(from, (bytes.get(from) ?? 0) + bytesInOutput);
  }
  const parts = [...bytes].map(([from, n]) => ({ from, bytes: n })).sort((a, b) => b.bytes - a.bytes);
  const glue = scriptBytes - parts.reduce((sum, part) => sum + part.bytes, 0);
  return [...parts, { from: "(the bundler's glue, license comments)", bytes: glue }];
}

const BUILD_WITHIN_MS = 180_000;
/** The metafile, written beside the script (outside the .js files counted). */
const META = "bundle-meta.json";

export async function measureBundle(): Promise<BundleSize> {
  const out = await mkdtemp(path.join(tmpdir(), "lembas-edge-bench-bundle-"));
  try {
    await promisify(execFile)(
      process.execPath,
      [WRANGLER, "deploy", "--dry-run", "--outdir", out, "--metafile", path.join(out, META)],
      {
        cwd: ROOT,
        env: WRANGLER_ENV,
        timeout: BUILD_WITHIN_MS,
      },
    );
    const scripts = (await readdir(out)).filter((name) => name.endsWith(".js"));
    if (scripts.length !== 1) throw new Error(`the dry run wrote ${scripts.length} scripts: ${scripts.join(", ")}`);
    const script = await readFile(path.join(out, scripts[0]!));
    const metafile = JSON.parse(await readFile(path.join(out, META), "utf8")) as Metafile;
    return {
      bytes: script.length,
      gzipBytes: gzipSync(script).length,
      parts: partsOf(metafile, scripts[0]!, script.length),
    };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
