/**
 * Writes web/public/index.html, the single-page app's one page, from web/src/index.html: the chunks main.js imports
 * go where the template says `<!-- modulepreload -->`, so the browser fetches them beside main.js instead of after
 * it. Run by `npm run build:web` and, when there is no page yet, by the workerd test config.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const MARK = "<!-- modulepreload -->";

/** `chunks`: paths under web/public, such as js/chunk-ABC.js. */
export function writePageFile(root: string, chunks: readonly string[]): void {
  const template = readFileSync(path.join(root, "web/src/index.html"), "utf8");
  if (!template.includes(MARK)) throw new Error(`web/src/index.html has no ${MARK}`);
  const links = chunks.map((chunk) => `<link rel="modulepreload" href="/${chunk}">`).join("\n  ");
  writeFileSync(path.join(root, "web/public/index.html"), template.replace(MARK, links));
}
