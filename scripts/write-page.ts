/**
 * Writes web/public/index.html, the single-page app's one page, from web/src/index.html: web/src/early.ts, built
 * for the page, goes inline where the template says `<!-- early -->` (it runs as the head is read, before any
 * script is fetched), and the chunks main.js imports where it says `<!-- modulepreload -->`, so the browser fetches
 * them beside main.js instead of after it. Run by `npm run build:web` and, when there is no page yet, by the workerd
 * test config. The page's security headers allow that inline script by its hash (scripts/write-headers.ts).
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import * as esbuild from "esbuild";

const EARLY = "<!-- early -->";
const PRELOADS = "<!-- modulepreload -->";

/**
 * `chunks`: what main.js imports, paths under web/public such as js/chunk-ABC.js; `deviceChunks`: the device page's
 * chunk(s), which the inline script asks for on a device's address. Returns the inline script.
 */
export async function writePageFile(
  root: string,
  chunks: readonly string[],
  deviceChunks: readonly string[],
): Promise<string> {
  const template = readFileSync(path.join(root, "web/src/index.html"), "utf8");
  for (const mark of [EARLY, PRELOADS])
    if (!template.includes(mark)) throw new Error(`web/src/index.html has no ${mark}`);
  const early = await esbuild.build({
    entryPoints: [path.join(root, "web/src/early.ts")],
    bundle: true,
    minify: true,
    write: false,
    format: "iife",
    target: ["es2022", "chrome111", "safari16.4", "firefox115"],
    define: { DEVICE_CHUNKS: JSON.stringify(deviceChunks.map((chunk) => `/${chunk}`)) },
    logLevel: "warning",
  });
  const script = early.outputFiles[0]!.text.trim();
  if (/<\/script|<!--/i.test(script)) throw new Error("web/src/early.ts built to text that would end its <script>");
  const links = chunks.map((chunk) => `<link rel="modulepreload" href="/${chunk}">`).join("\n  ");
  const page = template.replace(EARLY, `<script>${script}</script>`).replace(PRELOADS, links);
  writeFileSync(path.join(root, "web/public/index.html"), page);
  return script;
}
