/**
 * The JSON the HTTP API answers a person (docs/http-api.md: accounts, devices, chats, usage, models), as plain types with no
 * platform behind them: the handlers build these, and the web UI imports them (type-only) instead of restating
 * them — a module that named Workers types could not be type-checked beside the browser's DOM.
 */

/** A person's account (sign-in, GET /api/auth/me). */
export interface UserView {
  id: string;
  email: string;
  admin: boolean;
}

/** One of a person's sign-ins (GET /api/auth/sessions); `current` is the one the request came with. */
export interface SignIn {
  id: string;
  created_at: number;
  expires_at: number;
  user_agent: string | null;
  current: boolean;
}

/**
 * A device login waiting for its code (POST /api/devices/lookup): the device as its CLI described itself, when it
 * asked (ms), and the account it will join.
 */
export interface WaitingLogin {
  name: string;
  host: string | null;
  platform: string | null;
  requested_at: number;
  requested_seconds_ago: number;
  expires_at: number;
  account: { id: string; email: string };
}

/**
 * What a token may do beyond its usual routes (docs/http-api.md, "Scopes"). `library`: the account's library, over /mcp.
 */
export const SCOPES = ["library"] as const;
export type Scope = (typeof SCOPES)[number];

/** What approving a code answers: the login, the new device's id, and its scopes. */
export interface ApprovedDevice extends WaitingLogin {
  device_id: string;
  scopes: Scope[];
}

/** A device as its owner sees it (GET /api/devices). */
export interface DeviceInfo {
  id: string;
  name: string;
  online: boolean;
  last_seen: number | null;
  protocol: number | null;
  host: string | null;
  platform: string | null;
  capabilities: unknown;
  agent_info: unknown;
  /** ACP's agentCapabilities of the last link's agent, as the instance relays them. */
  agent_capabilities: unknown;
  auth_methods: unknown;
  /** What the device's token may do beyond the CLI's API. */
  scopes: Scope[];
  created_at: number;
}

/** A chat as its owner sees it (GET /api/chats). */
export interface ChatInfo {
  device_id: string;
  session_id: string;
  title: string | null;
  cwd: string;
  origin: "web" | "terminal";
  model: string | null;
  mode: string | null;
  busy: boolean;
  updated_at: number;
  /** The person deleted it and the device has not taken the delete yet. */
  pending_delete: boolean;
}

/**
 * What became of a person's delete: taken by the device, kept to be sent again (reason: why not now), failed —
 * the instance could not even keep it (reason says so; nothing changed, so asking again is safe) — or refused: the
 * account already has as many deletes waiting as it may (reason says so; nothing changed).
 */
export interface DeleteOutcome {
  status: "deleted" | "pending" | "failed" | "refused";
  reason?: string;
}

/** The currencies a plan may price its credits in. */
export type Currency = "EUR" | "USD" | "GBP";

/** Tokens and credits spent (a month's, a device's), as reported. */
export interface SpendReport {
  tokens_in: number;
  tokens_out: number;
  cost: number;
}

/** A rolling spending window: its limit and spend in credits, and when enough of it frees (ISO), or null. */
export interface WindowReport {
  window: string;
  limit: number;
  spent: number;
  frees_at: string | null;
}

/** GET /v1/usage (the spec's shape) and GET /api/usage. Money fields come with a plan that has a currency. */
export interface UsageReport {
  plan: { name: string; credits_per_month: number } | null;
  balance: number | null;
  month: SpendReport & { from: string; cost_money?: number | null };
  device: SpendReport & { cost_money?: number | null };
  unit: "credits";
  currency?: Currency;
  credit_value?: number;
  balance_money?: number | null;
  /** No limit, never refused; its windows are not listed. */
  admin?: true;
  windows?: WindowReport[];
}

/** The kinds of model an instance serves (spec: GET /v1/models). */
export const MODEL_KINDS = ["chat", "embedding", "stt", "tts", "image"] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

/** GET /v1/models and GET /api/models: OpenAI's list shape, each entry with its kind and provider. */
export interface ModelList {
  object: "list";
  data: { id: string; object: "model"; created: number; owned_by: string; kind: ModelKind; provider: string }[];
}

/** A browser's push subscription as its owner sees it (GET/POST /api/push/subscriptions): never its keys. */
export interface PushSubscriptionInfo {
  endpoint: string;
  cards: boolean;
  turn_end: boolean;
  link_down: boolean;
  created_at: number;
}

/** A document of the account's library, as /mcp's library tools answer it (library_list, library_add). */
export interface LibraryDocument {
  id: string;
  title: string;
  source: string | null;
  /** Passages it was split into. */
  chunks: number;
  created_at: number;
}

/** library_get: the document with its text. */
export interface LibraryDocumentText extends LibraryDocument {
  text: string;
}

/** One passage library_search found. */
export interface LibrarySearchResult {
  document_id: string;
  title: string;
  source: string | null;
  /** The passage's place in its document, from 0. */
  chunk: number;
  /** Cosine similarity to the query, -1 to 1. */
  score: number;
  text: string;
}
