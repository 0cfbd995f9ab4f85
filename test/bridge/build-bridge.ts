/** Vitest global setup: compile the bridge, as `npm install` users get it, before any test runs it. */
import { execFileSync } from "node:child_process";
import path from "node:path";

export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "../..");
  execFileSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.bridge.json"], {
    cwd: root,
    stdio: "inherit",
  });
}
