/**
 * What LLeMbas CLI says when it links, for the scripted devices of both runners (the workerd tests' in
 * test/helpers/link.ts, the e2e suite's ACP SDK agent in test/e2e/helpers/lembas-device.ts): its `_lembas/hello`
 * params and its answer to the instance's initialize. Unless a device says otherwise, it says the spec's example.
 */

/** A device's limits, as its hello and its initialize answer's `_meta.lembas` state them. */
export interface Limits {
  roots: string[];
  max_mode: string;
  require_trust?: boolean;
}

const HARNESS_SPEC = "1.0.0";

/** `_lembas/hello`'s params. */
export function cliHelloParams({
  protocol = 2,
  version = "1.4.0",
  host = "work-laptop",
  limits = { roots: ["~/work"], max_mode: "edit", require_trust: true } as Limits,
} = {}) {
  return { protocol, version, harness_spec: HARNESS_SPEC, device: { host, platform: "linux" }, limits };
}

/** The result of the device's answer to initialize. */
export function cliInitializeResult({
  protocol = 2,
  version = "1.4.0",
  // The spec's example leaves require_trust to the hello.
  limits = { roots: ["~/work"], max_mode: "edit" } as Limits,
  connection = "example",
  capabilities = [] as readonly string[],
  promptCapabilities = { image: true, audio: false, embeddedContext: true },
} = {}) {
  return {
    protocolVersion: 1,
    agentCapabilities: {
      loadSession: false,
      promptCapabilities,
      mcpCapabilities: { http: false, sse: false },
    },
    authMethods: [],
    agentInfo: { name: "LLeMbas CLI", version },
    _meta: { lembas: { protocol, harness_spec: HARNESS_SPEC, limits, connection, capabilities } },
  };
}
