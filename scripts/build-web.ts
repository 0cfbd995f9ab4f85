/**
 * `npm run build:web`: bundles the web UI (web/src) with esbuild into web/public, where the Worker serves it as
 * static assets, and prints what a browser downloads — minified and gzipped, for the first page and for what loads
 * later (the Markdown renderer, jsdiff and the terminal emulator are chunks of their own, each fetched by `import()`
 * when a page first needs it: web/src/lazy.ts). The first page has a budget
 * (FIRST_PAGE_GZIP_BUDGET): past it the build fails.
 *
 * It also writes the page itself, web/public/index.html from web/src/index.html (scripts/write-page.ts), with
 * web/src/early.ts inline (on a device's address it asks for the device page's chunk and dials the device's socket
 * without waiting for main.js to run) and the chunks main.js imports as `modulepreload`s: the browser fetches them
 * beside main.js rather than a round trip after it; and then web/public/_headers, the pages' security headers
 * (scripts/write-headers.ts), which allow that inline script by its hash.
 * Entries: web/src/main.tsx → /js/main.js (+ /js/main.css, + /js/chunk-*.js), and a service worker at
 * web/src/sw.ts, when there is one, → /sw.js (at the root, so its scope is the whole app).
 * `--watch` rebuilds on change (for working on the UI beside `npm start`).
 */
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";
import { writeHeadersFile } from "./write-headers.ts";
import { writePageFile } from "./write-page.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
const SRC = path.join(ROOT, "web/src");
const PUBLIC = path.join(ROOT, "web/public");
const OUT = path.join(PUBLIC, "js");
const SERVICE_WORKER = path.join(SRC, "sw.ts");
const watch = process.argv.includes("--watch");

const common: esbuild.BuildOptions = {
  bundle: true,
  minify: true,
  // Beside the files, named by no comment and never served (web/public/.assetsignore).
  sourcemap: "external",
  target: ["es2022", "chrome111", "safari16.4", "firefox115"],
  legalComments: "linked",
  jsx: "automatic",
  jsxImportSource: "preact",
  logLevel: "warning",
  metafile: true,
};

const app: esbuild.BuildOptions = {
  ...common,
  entryPoints: [path.join(SRC, "main.tsx")],
  outdir: OUT,
  format: "esm",
  splitting: true,
  chunkNames: "chunk-[hash]",
  // Fonts and images a stylesheet names are copied beside it.
  loader: { ".woff2": "file", ".svg": "file", ".png": "file" },
};

const serviceWorker: esbuild.BuildOptions = {
  ...common,
  entryPoints: [SERVICE_WORKER],
  outfile: path.join(PUBLIC, "sw.js"),
  format: "iife",
};

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
/**
 * What a phone downloads before the first page works, gzipped, at the most: the build fails past it, so the bundle
 * grows only by a decision (raise this with the figures in docs/web-ui.md, and say why in the commit).
 */
const FIRST_PAGE_GZIP_BUDGET = 50 * 1024;

/** The first page's bytes gzipped: all of it, and its scripts alone; the chunks main.js imports; the device page's. */
export interface FirstPage {
  gzip: number;
  scriptGzip: number;
  chunks: string[];
  deviceChunks: string[];
}

/** The device page, imported by web/src/pages/device-chunk.tsx: a chunk of its own, which the inline script asks for. */
const DEVICE_PAGE = path.relative(ROOT, path.join(SRC, "pages/device.tsx"));

/**
 * One line per output: its size minified and gzipped; then the first page's total and the lazy chunks'. Returns the
 * first page's gzipped bytes.
 */
function report(metafiles: esbuild.Metafile[]): FirstPage {
  const rows: { file: string; bytes: number; gzip: number; initial: boolean }[] = [];
  const imported = new Set<string>();
  const outputs = Object.assign({}, ...metafiles.map((m) => m.outputs)) as esbuild.Metafile["outputs"];
  // What main.js imports statically (and main.css) is the first page; a dynamically imported chunk loads later.
  const walk = (file: string) => {
    if (imported.has(file)) return;
    imported.add(file);
    for (const i of outputs[file]?.imports ?? []) if (i.kind === "import-statement") walk(i.path);
  };
  for (const entry of Object.keys(outputs).filter((f) => f.endsWith("js/main.js"))) walk(entry);
  // The device page's chunk the inline script asks for on a device's address is fetched beside main.js; what that
  // chunk imports is in the first page too, so it comes with the page rather than one round trip after the chunk.
  const devicePage = Object.keys(outputs).filter((f) => outputs[f]!.entryPoint === DEVICE_PAGE);
  for (const chunk of devicePage)
    for (const i of outputs[chunk]!.imports) if (i.kind === "import-statement") walk(i.path);
  for (const [file, out] of Object.entries(outputs)) {
    if (file.endsWith(".map") || file.endsWith(".LEGAL.txt")) continue;
    const gzip = gzipSync(readFileSync(path.join(ROOT, file))).length;
    const initial = imported.has(file) || file.endsWith("js/main.css");
    rows.push({ file: path.relative(PUBLIC, path.join(ROOT, file)), bytes: out.bytes, gzip, initial });
  }
  const sum = (list: typeof rows, key: "bytes" | "gzip") => list.reduce((n, r) => n + r[key], 0);
  const first = rows.filter((r) => r.initial);
  const later = rows.filter((r) => !r.initial);
  const lines = rows.map((r) => `  ${r.file.padEnd(28)} ${kib(r.bytes).padStart(10)} ${kib(r.gzip).padStart(10)} gz`);
  console.log(`web UI built into web/public:\n${lines.join("\n")}`);
  console.log(
    `  first page: ${kib(sum(first, "bytes"))} (${kib(sum(first, "gzip"))} gzipped); loaded later: ` +
      `${kib(sum(later, "bytes"))} (${kib(sum(later, "gzip"))} gzipped)`,
  );
  return {
    gzip: sum(first, "gzip"),
    scriptGzip: sum(
      first.filter((r) => r.file.endsWith(".js")),
      "gzip",
    ),
    chunks: first.map((r) => r.file).filter((f) => f.startsWith("js/chunk-")),
    deviceChunks: devicePage.map((f) => path.relative(PUBLIC, path.join(ROOT, f))),
  };
}

async function build(): Promise<void> {
  await rm(OUT, { recursive: true, force: true });
  // Until a build names its chunks (watching never does), the page loads them after main.js.
  await writePageFile(ROOT, [], []);
  writeHeadersFile(ROOT);
  const configs = [app, ...(existsSync(SERVICE_WORKER) ? [serviceWorker] : [])];
  if (watch) {
    for (const config of configs) await (await esbuild.context(config)).watch();
    console.log("watching web/src …");
    return;
  }
  const results = await Promise.all(configs.map((config) => esbuild.build(config)));
  const firstPage = report(results.map((r) => r.metafile!));
  const inline = gzipSync(await writePageFile(ROOT, firstPage.chunks, firstPage.deviceChunks)).length;
  writeHeadersFile(ROOT);
  // The page's inline script is the first page's too.
  firstPage.gzip += inline;
  firstPage.scriptGzip += inline;
  console.log(`  and index.html's inline script (web/src/early.ts): ${kib(inline)} gzipped`);
  // `--json`: the figures on the last line, for the bench.
  if (process.argv.includes("--json"))
    console.log(JSON.stringify({ gzip: firstPage.gzip, scriptGzip: firstPage.scriptGzip }));
  if (firstPage.gzip > FIRST_PAGE_GZIP_BUDGET) {
    console.error(
      `the first page is ${kib(firstPage.gzip)} gzipped, over its budget of ${kib(FIRST_PAGE_GZIP_BUDGET)}`,
    );
    process.exitCode = 1;
  }
}

await build();
