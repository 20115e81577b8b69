// The command lines of the extension host's child processes: VS Code's own MCP support runs a stdio server of a
// workspace file as a child of the extension host, the process this extension runs in. Linux reads them from /proc,
// macOS from `ps`; elsewhere there are none to tell (VS Code's MCP support is not offered host_bridge's servers on
// Windows either).
import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";

/** A child process: its pid and its command line, its arguments joined by spaces. */
export interface ChildProcess {
  readonly pid: number;
  readonly commandLine: string;
}

/** The children of process `parent` (default: this one). */
export async function childProcesses(parent = process.pid): Promise<ChildProcess[]> {
  if (process.platform === "linux") {
    return linuxChildren(parent);
  }
  if (process.platform === "darwin") {
    return parsePs(await psOutput(), parent);
  }
  return [];
}

async function linuxChildren(parent: number): Promise<ChildProcess[]> {
  const tasks = await fs.readdir(`/proc/${parent}/task`).catch(() => [] as string[]);
  const pids = new Set<number>();
  for (const task of tasks) {
    const children = await fs.readFile(`/proc/${parent}/task/${task}/children`, "utf8").catch(() => "");
    for (const pid of children.split(/\s+/).filter((word) => word !== "")) {
      pids.add(Number(pid));
    }
  }
  const found: ChildProcess[] = [];
  for (const pid of pids) {
    const raw = await fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (raw !== "") {
      found.push({ pid, commandLine: raw.replace(/\0+$/, "").split("\0").join(" ") });
    }
  }
  return found;
}

function psOutput(): Promise<string> {
  return new Promise((resolve) => {
    execFile("ps", ["-A", "-o", "pid=,ppid=,args="], { maxBuffer: 8 * 1024 * 1024 }, (error, stdout) =>
      resolve(error === null ? stdout : ""),
    );
  });
}

/** The children of `parent` in the output of `ps -A -o pid=,ppid=,args=`. */
export function parsePs(output: string, parent: number): ChildProcess[] {
  const found: ChildProcess[] = [];
  for (const line of output.split("\n")) {
    const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (match !== null && Number(match[2]) === parent) {
      found.push({ pid: Number(match[1]), commandLine: (match[3] ?? "").trim() });
    }
  }
  return found;
}
