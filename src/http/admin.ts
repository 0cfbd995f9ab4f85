/**
 * /api/admin/…: the operator's plans and credits. Admins only (a signed-in person, or their API token, whose account
 * has users.admin = 1); writes from a browser must come from the instance's own pages.
 *
 *   GET    /api/admin/plans                            every plan with its windows
 *   PUT    /api/admin/plans/:plan                      create or replace a plan
 *   DELETE /api/admin/plans/:plan                      its accounts are left without a plan
 *   GET    /api/admin/accounts/:account                an account's standing (by id or email)
 *   PUT    /api/admin/accounts/:account/plan           { plan: name | null }
 *   POST   /api/admin/accounts/:account/credits        { credits, note? } (negative takes credits back)
 *   PUT    /api/admin/accounts/:account/admin          { admin: boolean }
 *   PUT    /api/admin/accounts/:account/personalization { available: boolean }
 */
import * as z from "zod/mini";
import type { IRequest } from "itty-router";
import type { Env } from "../env";
import type { Handler } from "./handler";
import { lastAdmin, requireAdmin } from "./guards";
import { readJson } from "./body";
import { HttpError, json } from "../respond";
import { deletePlan, listPlans, planExists, putPlan } from "../db/plans";
import {
  assignPlan,
  findAccount,
  grantCredits,
  setAdmin,
  setPersonalizationAvailable,
  type AccountRef,
} from "../db/account-settings";
import { readStanding } from "../db/ledger";
import { MAX_CREDITS, toCredits, toMicro } from "../db/micro-credits";
import { readPersonalization } from "../db/personalization";

const UNITS = { m: 60, h: 3600, d: 86_400 } as const;

/** Credits as an operator gives them: finite, and at most a billion either way, so the ledger stays bounded. */
const credits = () => z.number().check(z.gte(-MAX_CREDITS), z.lte(MAX_CREDITS));

const WindowSpec = z.object({
  window: z.string().check(z.regex(/^[1-9]\d{0,5}[mhd]$/, 'a window is a length like "30m", "5h" or "7d"')),
  limit: credits().check(z.nonnegative()),
});

const PlanSpec = z
  .object({
    credits_per_month: credits().check(z.nonnegative()),
    currency: z.nullish(z.literal(["EUR", "USD", "GBP"])),
    credit_value: z.nullish(z.number().check(z.positive(), z.lte(MAX_CREDITS))),
    windows: z._default(z.array(WindowSpec).check(z.maxLength(10)), []),
  })
  .check(
    z.refine(
      (p) => (p.currency == null) === (p.credit_value == null),
      "currency and credit_value go together: give both or neither",
    ),
    z.refine((p) => new Set(p.windows.map((w) => w.window)).size === p.windows.length, "each window may appear once"),
  );

const PlanName = z
  .string()
  .check(z.regex(/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/, "a plan name is up to 64 letters, digits, spaces, _ . or -"));

function planName(request: IRequest): string {
  const parsed = PlanName.safeParse(decodeURIComponent(request.params.plan ?? ""));
  if (!parsed.success) throw new HttpError(400, parsed.error.issues[0]!.message);
  return parsed.data;
}

async function account(request: IRequest, env: Env): Promise<AccountRef> {
  const ref = decodeURIComponent(request.params.account ?? "");
  const found = await findAccount(env.DB, ref);
  if (!found) throw new HttpError(404, `no account ${ref}`);
  return found;
}

async function accountView(env: Env, id: string) {
  const [user, standing, personalization] = await Promise.all([
    findAccount(env.DB, id),
    readStanding(env.DB, id, Date.now()),
    readPersonalization(env.DB, id),
  ]);
  return {
    id,
    email: user!.email,
    admin: standing.admin,
    plan: standing.plan?.name ?? null,
    balance: standing.balanceMicro === null ? null : toCredits(standing.balanceMicro),
    personalization_available: personalization.available,
  };
}

export const adminListPlans: Handler = async (request, env) => {
  await requireAdmin(request, env, false);
  return json({ plans: await listPlans(env.DB) });
};

export const adminPutPlan: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const name = planName(request);
  const spec = await readJson(request, PlanSpec);
  const windows = spec.windows.map((w) => ({
    window: w.window,
    limit: w.limit,
    seconds: Number(w.window.slice(0, -1)) * UNITS[w.window.at(-1) as keyof typeof UNITS],
  }));
  const plan = {
    name,
    credits_per_month: spec.credits_per_month,
    currency: spec.currency ?? null,
    credit_value: spec.credit_value ?? null,
    windows,
  };
  await putPlan(env.DB, plan, Date.now());
  return json(plan);
};

export const adminDeletePlan: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const name = planName(request);
  if (!(await deletePlan(env.DB, name))) throw new HttpError(404, `no plan ${name}`);
  return json({ deleted: name });
};

export const adminGetAccount: Handler = async (request, env) => {
  await requireAdmin(request, env, false);
  return json(await accountView(env, (await account(request, env)).id));
};

const PlanChoice = z.object({ plan: z.nullable(PlanName) });

export const adminAssignPlan: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const target = await account(request, env);
  const { plan } = await readJson(request, PlanChoice);
  if (plan !== null && !(await planExists(env.DB, plan)))
    throw new HttpError(404, `no plan ${plan}; PUT /api/admin/plans/${plan} makes it`);
  await assignPlan(env.DB, target.id, plan, Date.now());
  return json(await accountView(env, target.id));
};

const Grant = z.object({
  credits: credits().check(z.refine((n) => toMicro(n) !== 0, "credits is a non-zero number (at least 0.000001)")),
  note: z.optional(z.string().check(z.maxLength(500))),
});

export const adminGrantCredits: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const target = await account(request, env);
  const grant = await readJson(request, Grant);
  if (!(await grantCredits(env.DB, target.id, toMicro(grant.credits), grant.note ?? null, Date.now())))
    throw new HttpError(409, `a balance is kept within ±${MAX_CREDITS} credits; this grant would take it past that`);
  return json(await accountView(env, target.id));
};

export const adminSetAdmin: Handler = async (request, env) => {
  const me = await requireAdmin(request, env, true);
  const target = await account(request, env);
  const { admin } = await readJson(request, z.object({ admin: z.boolean() }));
  // An admin cannot demote themself, so the instance always keeps one who can undo a mistake.
  if (!admin && target.id === me.id)
    throw new HttpError(409, "you cannot remove your own admin rights; ask another admin");
  const outcome = await setAdmin(env.DB, me.id, target.id, admin);
  if (outcome === "not admin") throw new HttpError(403, "you are no longer an admin");
  if (outcome === "last admin") throw lastAdmin();
  return json(await accountView(env, target.id));
};

export const adminSetPersonalization: Handler = async (request, env) => {
  await requireAdmin(request, env, true);
  const target = await account(request, env);
  const { available } = await readJson(request, z.object({ available: z.boolean() }));
  await setPersonalizationAvailable(env.DB, target.id, available);
  return json(await accountView(env, target.id));
};
