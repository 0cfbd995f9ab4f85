/**
 * A token's scopes (protocol/http-api.ts names them) as stored beside it (API tokens, devices): a space-separated
 * list. A person signed in with the session cookie has every scope; a token made before scopes existed has none
 * until its owner gives it one.
 */

import { SCOPES, type Scope } from "../protocol/http-api";

/** The stored text of a scope list; unknown names (from a later version) are dropped. */
export const readScopes = (text: string): Scope[] => SCOPES.filter((s) => text.split(" ").includes(s));

export const writeScopes = (scopes: readonly Scope[]): string => SCOPES.filter((s) => scopes.includes(s)).join(" ");
