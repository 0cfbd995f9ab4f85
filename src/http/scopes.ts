/**
 * Scopes at the HTTP edge: as a request gives them, the refusal of a credential without one, and of one handing out
 * more than it holds.
 */
import * as z from "zod/mini";
import { SCOPES, type Scope } from "../protocol/http-api";
import { HttpError } from "../respond";

/** Scopes as a request gives them: a list of known names, each at most once. */
export const ScopeList = z.array(z.literal(SCOPES)).check(
  z.maxLength(SCOPES.length),
  z.refine((s) => new Set(s).size === s.length, "each scope may appear once"),
);

/** How a person gives a token `scope`: what a refusal and /mcp's instructions say. */
export const howToGetScope = (scope: Scope) =>
  `approve the device with ${scope} access (or, signed in, PATCH /api/devices/<id> with {"scopes": ["${scope}"]}), ` +
  `or make an API token with scopes ["${scope}"]`;

export const missingScope = (scope: Scope) => `this token does not have the ${scope} scope: ${howToGetScope(scope)}`;

/**
 * 403 unless the caller holds every scope it hands out (to a token it makes, a device it approves or changes): a
 * credential can never make one wider than itself. A sign-in holds them all.
 */
export function requireHeld(held: readonly Scope[], given: readonly Scope[]): void {
  const missing = given.find((scope) => !held.includes(scope));
  if (missing === undefined) return;
  throw new HttpError(
    403,
    `this credential does not hold the ${missing} scope, so it cannot give it: sign in (a sign-in holds every ` +
      `scope) or use an API token that has ${missing}`,
    { scope: missing },
  );
}
