/** The device tokens this machine holds, one per instance origin, in a file only its owner can read. */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import * as z from "zod/mini";
import { Stop } from "./log.js";

const Credential = z.object({
  instance: z.string(),
  device_id: z.string(),
  token: z.string(),
});
export type Credential = z.infer<typeof Credential>;

const CredentialsFile = z.record(z.string(), Credential);
type CredentialsFile = z.infer<typeof CredentialsFile>;

/** $XDG_CONFIG_HOME/lembas-edge, or ~/.config/lembas-edge (the XDG base directory rule). */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(homedir(), ".config");
  return path.join(base, "lembas-edge");
}

export function credentialsPath(dir: string): string {
  return path.join(dir, "credentials.json");
}

async function readAll(dir: string): Promise<CredentialsFile> {
  const file = credentialsPath(dir);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Stop(`${file} is not valid JSON; remove it and run lembas-edge login again`);
  }
  const checked = CredentialsFile.safeParse(parsed);
  if (!checked.success) throw new Stop(`${file} does not hold lembas-edge logins; remove it and log in again`);
  return checked.data;
}

/** Keeps one login, replacing an older one of the same instance. The file is never seen half-written. */
export async function saveCredential(dir: string, credential: Credential): Promise<void> {
  const all = await readAll(dir);
  all[credential.instance] = credential;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode alone; a token directory others can list is still too open.
  await chmod(dir, 0o700);
  const temporary = path.join(dir, `.credentials.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(temporary, "wx", 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(all, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temporary, credentialsPath(dir));
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** The login for `origin`, or the only login there is when no instance is named. */
export async function findCredential(dir: string, origin: string | null): Promise<Credential> {
  const all = await readAll(dir);
  if (origin !== null) {
    const credential = all[origin];
    if (!credential) throw new Stop(`not logged in to ${origin}; run lembas-edge login ${origin} first`);
    return credential;
  }
  const logins = Object.values(all);
  if (logins.length === 0) throw new Stop("not logged in to any instance; run lembas-edge login <instance-url> first");
  if (logins.length > 1) {
    const names = logins.map((login) => login.instance).join(", ");
    throw new Stop(`logged in to several instances (${names}); choose one with --instance`, 2);
  }
  return logins[0]!;
}
