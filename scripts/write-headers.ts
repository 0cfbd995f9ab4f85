/**
 * Writes web/public/_headers, the security headers the assets layer puts on the web UI's files, from the one
 * module that defines them. Run by `npm run build:web` (so by `wrangler dev` and `wrangler deploy`) and by the
 * workerd test config.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { headersFile } from "../src/http/security-headers.ts";

export function writeHeadersFile(root: string): void {
  const file = path.join(root, "web/public/_headers");
  const text = headersFile();
  // Unchanged, it is left alone: a runtime reading it while the other test suite starts never sees it emptied.
  if (!existsSync(file) || readFileSync(file, "utf8") !== text) writeFileSync(file, text);
}

if (process.argv[1] === import.meta.filename) writeHeadersFile(path.resolve(import.meta.dirname, ".."));
