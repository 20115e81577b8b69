// The process tree under a code-server instance, read from /proc (Linux only, like the rest of these tests).
import { readFileSync, readdirSync } from "node:fs";

/** A running process: its pid, parent pid, start time (clock ticks after boot) and command line. */
export interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly started: number;
  /** The arguments joined by spaces. */
  readonly command: string;
}

/** The fields of `/proc/<pid>/stat` after the command name: state, ppid … (index 19 is the start time). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name in parentheses may itself hold spaces and parentheses: parse after the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined; // It exited while we looked.
  }
}

/** The process `pid` as it runs now. */
export function processInfo(pid: number): ProcessInfo | undefined {
  const fields = statFields(pid);
  if (fields === undefined) {
    return undefined;
  }
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    return { pid, ppid: Number(fields[1]), started: Number(fields[19]), command };
  } catch {
    return undefined; // It exited while we looked.
  }
}

/** Every process now running. */
export function allProcesses(): ProcessInfo[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => processInfo(Number(name)))
    .filter((info): info is ProcessInfo => info !== undefined);
}

/** The processes below `root` (children, their children …), not `root` itself. */
export function descendants(root: number): ProcessInfo[] {
  const processes = allProcesses();
  const children = new Map<number, ProcessInfo[]>();
  for (const info of processes) {
    const siblings = children.get(info.ppid) ?? [];
    siblings.push(info);
    children.set(info.ppid, siblings);
  }
  const found: ProcessInfo[] = [];
  const queue = [root];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** Whether the process is still running (a zombie, or another process that got its pid, counts as gone). */
export function isRunning(info: Pick<ProcessInfo, "pid" | "started">): boolean {
  const fields = statFields(info.pid);
  return fields !== undefined && fields[0] !== "Z" && Number(fields[19]) === info.started;
}
