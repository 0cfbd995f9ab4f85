/** Scopes at the HTTP edge: as a request gives them, and the refusal of a credential without one. */
import * as z from "zod/mini";
import { SCOPES, type Scope } from "../protocol/http-api";
import { HttpError } from "../respond";

/** Scopes as a request gives them: a list of known names, each at most once. */
export const ScopeList = z.array(z.enum(SCOPES)).check(
  z.maxLength(SCOPES.length),
  z.refine((s) => new Set(s).size === s.length, "each scope may appear once"),
);

export const missingScope = (scope: Scope) =>
  `this token does not have the ${scope} scope: approve the device with ${scope} access (or give it in the ` +
  `devices list), or make an API token with scopes ["${scope}"]`;

/** 403 unless the caller's credential carries `scope`, saying how to get it. */
export function requireScope(scopes: readonly Scope[], scope: Scope): void {
  if (!scopes.includes(scope)) throw new HttpError(403, missingScope(scope));
}
