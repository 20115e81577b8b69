// Looking at processes through Linux `/proc`, to check that the sidecar leaves no MCP server behind.
import { readFileSync, readdirSync } from "node:fs";

/** Direct children of `pid` (every thread's children). */
export function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8");
    found.push(
      ...text
        .split(/\s+/)
        .filter((word) => word !== "")
        .map(Number),
    );
  }
  return found;
}

/** Whether `pid` runs; a zombie (exited, not yet reaped) does not count. */
export function alive(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return false;
  }
  // The command name in parentheses may contain spaces; the state follows the last ")".
  const state = stat
    .slice(stat.lastIndexOf(")") + 1)
    .trim()
    .split(/\s+/)[0];
  return state !== "Z";
}

/** The command line of `pid`, arguments joined by spaces; empty when it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((arg) => arg !== "")
      .join(" ");
  } catch {
    return "";
  }
}
