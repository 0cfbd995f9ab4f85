/** Reading processes from Linux's /proc: a process's children, and its resident memory. */
import { readdirSync, readFileSync } from "node:fs";

export interface ProcessInfo {
  pid: number;
  comm: string;
  cmdline: string;
}

/** The direct children of a process (every thread's children, as /proc lists them per task). */
export function childrenOf(pid: number): ProcessInfo[] {
  const pids = new Set<number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean))
      pids.add(Number(child));
  }
  return [...pids].map((child) => ({
    pid: child,
    comm: readFileSync(`/proc/${child}/comm`, "utf8").trim(),
    cmdline: readFileSync(`/proc/${child}/cmdline`, "utf8").replaceAll("\0", " "),
  }));
}

/** Resident set size in bytes (VmRSS), or NaN when the process is gone. */
export function rssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
