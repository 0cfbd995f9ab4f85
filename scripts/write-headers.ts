/**
 * Writes web/public/_headers, the security headers the assets layer puts on the web UI's files, from the one
 * module that defines them. Run by `npm run build:web` (so by `wrangler dev` and `wrangler deploy`) and by the
 * workerd test config.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { headersFile } from "../src/http/security-headers.ts";

export function writeHeadersFile(root: string): void {
  writeFileSync(path.join(root, "web/public/_headers"), headersFile());
}

if (process.argv[1] === import.meta.filename) writeHeadersFile(path.resolve(import.meta.dirname, ".."));
