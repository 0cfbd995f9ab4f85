/**
 * Writes web/public/_headers, the security headers the assets layer puts on the web UI's files, from the one
 * module that defines them, with the hash of each inline script of the written page (web/public/index.html,
 * scripts/write-page.ts) as the scripts the policy allows besides the app's own files. Run by `npm run build:web`
 * (so by `wrangler dev` and `wrangler deploy`) and by the workerd test config, each after writing the page.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { headersFile } from "../src/http/security-headers.ts";

/** `'sha256-…'` of every inline script of the page, as CSP names one. */
export function inlineScriptHashes(page: string): string[] {
  return [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    ([, source]) => `'sha256-${createHash("sha256").update(source!).digest("base64")}'`,
  );
}

export function writeHeadersFile(root: string): void {
  const file = path.join(root, "web/public/_headers");
  const page = path.join(root, "web/public/index.html");
  const text = headersFile(existsSync(page) ? inlineScriptHashes(readFileSync(page, "utf8")) : []);
  // Unchanged, it is left alone: a runtime reading it while the other test suite starts never sees it emptied.
  if (!existsSync(file) || readFileSync(file, "utf8") !== text) writeFileSync(file, text);
}

if (process.argv[1] === import.meta.filename) writeHeadersFile(path.resolve(import.meta.dirname, ".."));
