/**
 * `npm run admin -- <command> …`: the operator's plans and credits, through the instance's /api/admin endpoints.
 * The instance URL and an admin's API token come from --url / --token or LEMBAS_URL / LEMBAS_ADMIN_TOKEN.
 */
import { parseArgs } from "node:util";

const USAGE = `usage: npm run admin -- <command> [arguments] [--url URL] [--token TOKEN]

  plans                                     list the plans
  plan <name> --credits N [--currency EUR|USD|GBP --credit-value V] [--window 5h=LIMIT ...]
                                            create or replace a plan (windows: 30m, 5h, 7d … in credits)
  delete-plan <name>                        remove a plan; its accounts are left without one
  show <account>                            an account's plan, balance, admin and personalization
  assign <account> <plan|none>              put an account on a plan
  grant <account> <credits> [--note TEXT]   add credits (negative takes them back)
  admin <account> on|off                    make an account an admin, or not
  personalization <account> on|off          make personalization available to an account, or not
  vapid-keys                                a new VAPID key pair for Web Push, printed (no instance needed)

<account> is an id or an email. Environment: LEMBAS_URL, LEMBAS_ADMIN_TOKEN (an admin's API token, lba_…).`;

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string" },
    token: { type: "string" },
    credits: { type: "string" },
    currency: { type: "string" },
    "credit-value": { type: "string" },
    window: { type: "string", multiple: true },
    note: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

const base64url = (bytes: ArrayBuffer) => Buffer.from(new Uint8Array(bytes)).toString("base64url");

/** A P-256 pair in the web-push tools' form: the 32-byte private scalar and the 65-byte uncompressed public point. */
async function vapidKeys(): Promise<string> {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const { d } = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const publicKey = base64url(await crypto.subtle.exportKey("raw", pair.publicKey));
  return [
    "# Web Push (VAPID) keys. The public key and the contact are vars (wrangler.toml [vars]); the private key is",
    "# a secret: `npx wrangler secret put PUSH_VAPID_PRIVATE_KEY` when deployed. Locally, all three go in .dev.vars.",
    `PUSH_VAPID_PUBLIC_KEY=${publicKey}`,
    `PUSH_VAPID_PRIVATE_KEY=${d}`,
    "PUSH_CONTACT=mailto:you@example.com",
  ].join("\n");
}

function number(text: string | undefined, what: string): number {
  const n = Number(text);
  if (text === undefined || text.trim() === "" || !Number.isFinite(n)) fail(`${what} must be a number`);
  return n;
}

function onOff(text: string | undefined, what: string): boolean {
  if (text !== "on" && text !== "off") fail(`${what}: say on or off`);
  return text === "on";
}

const [command, ...args] = positionals;
if (flags.help || !command) {
  console.log(USAGE);
  process.exit(command || flags.help ? 0 : 2);
}
if (command === "vapid-keys") {
  console.log(await vapidKeys());
  process.exit(0);
}
const base = (flags.url ?? process.env.LEMBAS_URL ?? "").replace(/\/+$/, "");
const token = flags.token ?? process.env.LEMBAS_ADMIN_TOKEN;
if (!base) fail("give the instance's URL: --url https://… or LEMBAS_URL");
if (!token) fail("give an admin's API token: --token lba_… or LEMBAS_ADMIN_TOKEN");

const need = (i: number, what: string) => args[i] ?? fail(`${command}: missing ${what}\n\n${USAGE}`);
const account = (i = 0) => `/api/admin/accounts/${encodeURIComponent(need(i, "<account>"))}`;
const plan = (i = 0) => `/api/admin/plans/${encodeURIComponent(need(i, "<plan>"))}`;

function planSpec() {
  const windows = (flags.window ?? []).map((w) => {
    const [window, limit] = w.split("=");
    return { window, limit: number(limit, `--window ${w} (as 5h=LIMIT)`) };
  });
  const currency = flags.currency ?? null;
  const creditValue = flags["credit-value"] === undefined ? null : number(flags["credit-value"], "--credit-value");
  return { credits_per_month: number(flags.credits, "--credits"), currency, credit_value: creditValue, windows };
}

const requests: Record<string, () => [string, string, unknown?]> = {
  plans: () => ["GET", "/api/admin/plans"],
  plan: () => ["PUT", plan(), planSpec()],
  "delete-plan": () => ["DELETE", plan()],
  show: () => ["GET", account()],
  assign: () => ["PUT", `${account()}/plan`, { plan: need(1, "<plan|none>") === "none" ? null : args[1] }],
  grant: () => [
    "POST",
    `${account()}/credits`,
    { credits: number(need(1, "<credits>"), "<credits>"), note: flags.note },
  ],
  admin: () => ["PUT", `${account()}/admin`, { admin: onOff(args[1], "admin") }],
  personalization: () => ["PUT", `${account()}/personalization`, { available: onOff(args[1], "personalization") }],
};

const make = requests[command] ?? fail(`unknown command ${command}\n\n${USAGE}`);
const [method, path, body] = make();
let response: Response;
try {
  response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
} catch (err) {
  fail(`could not reach ${base}: ${err instanceof Error ? err.message : String(err)}`);
}
const text = await response.text();
let shown = text;
try {
  shown = JSON.stringify(JSON.parse(text), null, 2);
} catch {
  // not JSON: shown as it came
}
if (!response.ok) fail(`${response.status}: ${shown}`);
console.log(shown);
