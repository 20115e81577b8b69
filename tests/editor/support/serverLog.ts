// What an MCP server itself reported: the sidecar forwards each stderr line of a server to the extension's
// log as `[<server id>] <line>`, and VS Code writes that log to a file in the user data folder.
import type { CodeServer } from "./codeServer";
import { escapeRegExp, waitFor } from "./workbench";

/** The stderr lines of one MCP server, as the extension's log file holds them. */
export class ServerLog {
  private readonly prefix: RegExp;

  constructor(
    private readonly server: CodeServer,
    readonly serverId: string,
  ) {
    // `2026-11-22 02:31:22.217 [info] [files] Secure MCP Filesystem Server running on stdio`
    this.prefix = new RegExp(`^\\S+ \\S+ \\[\\w+\\] \\[${escapeRegExp(serverId)}\\] `);
  }

  /** The server's lines so far, without the log's prefix. */
  lines(): string[] {
    return this.server
      .extensionLog()
      .split("\n")
      .filter((line) => this.prefix.test(line))
      .map((line) => line.replace(this.prefix, ""));
  }

  /** A mark to wait for lines written after now. */
  mark(): number {
    return this.lines().length;
  }

  /** Wait for a line matching `pattern` written after `since` (a {@link mark}); return its match. */
  async waitForLine(pattern: RegExp, since = 0, timeout?: number): Promise<RegExpExecArray> {
    return waitFor(
      `the MCP server "${this.serverId}" to log ${pattern}`,
      () => {
        for (const line of this.lines().slice(since)) {
          const match = pattern.exec(line);
          if (match) {
            return match;
          }
        }
        return undefined;
      },
      timeout,
    );
  }
}

/** Wait for a line of the extension's own log matching `pattern`, among the lines after the first `since`. */
export async function waitForExtensionLog(server: CodeServer, pattern: RegExp, since = 0): Promise<string> {
  return waitFor(`the extension to log ${pattern}`, () =>
    server
      .extensionLog()
      .split("\n")
      .slice(since)
      .find((line) => pattern.test(line)),
  );
}

/** How many lines the extension's log has now (a mark for {@link waitForExtensionLog}). */
export function extensionLogLength(server: CodeServer): number {
  return server.extensionLog().split("\n").length - 1;
}

/** server-filesystem's report of the roots it adopted: `Updated allowed directories from MCP roots: N valid directories`. */
export const FILESYSTEM_ROOTS = /Updated allowed directories from MCP roots: (\d+) valid directories/;

/**
 * server-filesystem's report of adopting exactly `count` roots. Under the sandbox a change of consent is told to the
 * running server (it fetches its roots) and then enforced by a restart (the new process fetches them again), so one
 * change can leave two reports, the second after a later mark: wait for the count expected, not for the next report.
 */
export function filesystemRoots(count: number): RegExp {
  return new RegExp(`Updated allowed directories from MCP roots: ${count} valid directories`);
}
