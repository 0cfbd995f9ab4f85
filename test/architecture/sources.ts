import { readdir } from "node:fs/promises";
import path from "node:path";

/** The repository's root: every path these tests name is relative to it, with forward slashes. */
export const ROOT = path.resolve(import.meta.dirname, "../..");

/** The TypeScript modules under a folder (declaration files left out: they import nothing and declare no shape). */
export async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts"))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join("/"));
}
