/**
 * The most each stored text may hold, so that nobody — a person, a script, a device — can fill the database with
 * one value. What a person or script sends over HTTP is refused past its bound (zod, with a sentence); what a device
 * says about itself for display (its host, a chat's title) is cut to the bound; an identifier too long to store (a
 * session id) makes nothing at all. docs/security.md lists them.
 */
import * as z from "zod/mini";
import { PATH_MAX, SESSION_ID_MAX } from "../protocol/acp";
import { hasVisibleCharacter, NEEDS_VISIBLE } from "../protocol/names";

export const BOUNDS = {
  /** Names people give: API tokens, devices (characters). */
  name: 100,
  host: 255,
  platform: 64,
  sessionId: SESSION_ID_MAX,
  /** The spec's own bound on a session title. */
  title: 200,
  cwd: PATH_MAX,
  model: 256,
  mode: 64,
  /** Why a device refused a delete, kept with the pending delete. */
  reason: 500,
  /** What a device's initialize said about its agent (capabilities, info, offers), each as JSON text. */
  deviceJson: 4096,
  /** Each personalization text, in UTF-8 bytes. */
  personalizationBytes: 16 * 1024,
  userAgent: 256,
} as const;

/**
 * Characters a name may not hold: controls (C0, DEL, C1) and the bidirectional formatting characters, with which a
 * name can be made to read as another (or hide what follows it) wherever it is shown.
 */
const UNSHOWABLE = "\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069";
const HAS_UNSHOWABLE = new RegExp(`[${UNSHOWABLE}]`);
const EVERY_UNSHOWABLE = new RegExp(`[${UNSHOWABLE}]`, "g");

/**
 * A name a person gives (zod): trimmed, 1–`max` characters, at least one of them visible, no control or
 * bidirectional formatting character.
 */
export const displayName = (max: number = BOUNDS.name) =>
  z.string().check(
    z.trim(),
    z.minLength(1, "is required"),
    z.maxLength(max, `is longer than ${max} characters`),
    z.refine((name) => !HAS_UNSHOWABLE.test(name), "may not hold control or bidirectional formatting characters"),
    z.refine((name) => name === "" || hasVisibleCharacter(name), NEEDS_VISIBLE),
  );

/**
 * A text a device says about itself, made fit to store and show: control and bidirectional formatting characters
 * become U+FFFD, and it is cut to `max` characters (never inside a surrogate pair), with an ellipsis when it was.
 */
export function cut(text: string, max: number): string {
  const shown = text.replace(EVERY_UNSHOWABLE, "\uFFFD");
  if (shown.length <= max) return shown;
  let end = max - 1;
  const last = shown.charCodeAt(end - 1);
  if (last >= 0xd800 && last < 0xdc00) end--;
  return `${shown.slice(0, end)}…`;
}

export const cutOrNull = (text: string | null | undefined, max: number) => (text == null ? null : cut(text, max));

/** The value as JSON text, or null when that text would be longer than `max`: a value cut in half is no JSON. */
export function boundedJson(value: unknown, max: number): string | null {
  const text = JSON.stringify(value ?? null);
  return text.length <= max ? text : null;
}

const utf8Bytes = (text: string) => new TextEncoder().encode(text).byteLength;

/** A string of at most `max` UTF-8 bytes (zod), said in KiB. */
export const textOfBytes = (max: number, what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .check(
      z.refine((text) => text.length <= max && utf8Bytes(text) <= max, `${what} is longer than ${max / 1024} KiB`),
    );
