/** Reading processes from Linux's /proc: a process's children, its resident memory, open files and CPU time. */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

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

/** How many files (sockets included) the process has open, or NaN when gone. */
export function openFiles(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** What each of the process's open files is (a path, `socket:[inode]`, …); a file closed meanwhile is left out. */
export function openFileTargets(pid: number): string[] {
  const targets = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      targets.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {}
  }
  return targets;
}

/** The process's limit of open files (its soft limit), or NaN when gone. */
export function openFileLimit(pid: number): number {
  try {
    const match = /^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Clock ticks a second, as /proc counts CPU time (USER_HZ: 100 on every Linux the bench runs on). */
const TICKS_PER_SECOND = 100;

/** CPU time the process has used so far, user and system, all threads (ms; 10 ms resolution), or NaN when gone. */
export function cpuMs(pid: number): number {
  try {
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}
