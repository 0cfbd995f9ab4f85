import { defineConfig } from "vitest/config";

// The Node side: the bridge CLI against a local stand-in of the link, and end-to-end runs against the real Worker
// under `wrangler dev`. Both drive the compiled bridge, which the global setup builds first.
export default defineConfig({
  test: {
    environment: "node",
    include: [
      "test/bridge/**/*.test.ts",
      "test/e2e/**/*.test.ts",
      "test/browser/**/*.test.ts",
      "test/architecture/**/*.test.ts",
    ],
    setupFiles: ["./test/shared/wire-rules-setup.ts"],
    globalSetup: [
      "./test/bridge/build-bridge.ts",
      "./test/bridge/temp-root.ts",
      "./test/e2e/helpers/prepare-instances.ts",
      "./test/browser/browser-server.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // expect.poll waits for what a person would wait for (a list, a message) however slow a loaded machine is; its
    // default of 1 s is a timing assertion. A state that never comes still fails, at this bound.
    expect: { poll: { timeout: 30_000 } },
    // Two files at a time (Vitest's default on 2 cores is one): a file waits on its instance, its browser and its
    // peers more than it computes, and each has an instance, accounts and temporary folders of its own.
    maxWorkers: 2,
    // A worker runs file after file (about 1.6 s each to spawn one on a loaded machine); each file makes its own
    // instance, peers and folders, and the shared helpers hold no state between tests.
    isolate: false,
  },
});
