/** The web UI's first screen as a phone downloads it: the production build's figures (`npm run build:web`). */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./wrangler-dev.js";

export interface WebSize {
  /** What the first screen loads, gzipped: its scripts and stylesheet. */
  firstScreenGzip: number;
  /** Its scripts alone. */
  firstScreenScriptGzip: number;
}

export async function measureWeb(): Promise<WebSize> {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, "scripts/build-web.ts"), "--json"], {
    cwd: ROOT,
  });
  const figures = JSON.parse(stdout.trim().split("\n").at(-1)!) as { gzip: number; scriptGzip: number };
  return { firstScreenGzip: figures.gzip, firstScreenScriptGzip: figures.scriptGzip };
}
