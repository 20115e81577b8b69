// Playwright fixtures: a fresh two-folder workspace per test, and `openEditor`, which starts a throwaway
// code-server with the packaged extension and the given user settings and opens the workspace in the page.
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test as base } from "@playwright/test";
import { CodeServer } from "./codeServer";
import { type Folders, makeFolders } from "./folders";
import {
  PYTHON,
  SERVER_EVERYTHING,
  SERVER_FILESYSTEM,
  WORKSPACE_SERVER,
} from "./paths";
import { Workbench } from "./workbench";

/** The extensions folder the global setup installed the .vsix into. */
export const EXTENSIONS_DIR = path.join(__dirname, "..", ".run", "extensions");

/** A `hostBridge.servers` / `.vscode/mcp.json` entry. */
export interface ServerEntry {
  readonly type: "stdio";
  readonly command: string;
  readonly args: readonly string[];
}

/** The pinned server-filesystem, given no directories: it works only with the roots it is sent. */
export const filesystemServer = (): ServerEntry => ({
  type: "stdio",
  command: "node",
  args: [SERVER_FILESYSTEM],
});

/** The pinned server-everything over stdio. */
export const everythingServer = (): ServerEntry => ({
  type: "stdio",
  command: "node",
  args: [SERVER_EVERYTHING, "stdio"],
});

/** host_bridge's example workspace server, run by the repository's interpreter. */
export const workspaceServer = (): ServerEntry => ({
  type: "stdio",
  command: PYTHON,
  args: [WORKSPACE_SERVER],
});

/** How to start the editor. */
export interface EditorOptions {
  /** Leave VS Code's own MCP support and its chat on, as they are by default ({@link VS_CODE_MCP}; default: off). */
  readonly vsCodeMcp?: boolean;
  /** User-level `hostBridge.servers`. */
  readonly servers: Record<string, ServerEntry>;
  /** Leave Workspace Trust on, so the workspace opens in Restricted Mode until trusted (default: trust off). */
  readonly workspaceTrust?: boolean;
  /**
   * User-level `hostBridge.sandbox`; unset keeps the extension's default (`enforce`). Only for servers that must
   * touch paths outside the folders shared with them.
   */
  readonly sandbox?: "enforce" | "off";
  /** `hostBridge.python` (default: the repository's interpreter, which has host_bridge: no private environment). */
  readonly python?: string;
  /** code-server's environment, and so the sidecar's and pip's (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
  /** Open only this folder of the workspace, as a folder window (default: the two-folder workspace). */
  readonly folder?: "alpha" | "beta";
}

/** The user settings that leave VS Code's own MCP support on (VS Code still starts no server by itself). */
export const VS_CODE_MCP = {
  "chat.mcp.access": "all",
  "chat.disableAIFeatures": false,
  "chat.mcp.autostart": "never",
};

/** The user and machine settings of a test's code-server. */
export function editorSettings(options: EditorOptions): {
  user: object;
  machine: object;
} {
  const user = {
    "security.workspace.trust.enabled": options.workspaceTrust === true,
    "security.workspace.trust.startupPrompt": "always",
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "workbench.enableExperiments": false,
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    // VS Code's own MCP support would read .vscode/mcp.json too; these tests are about the extension's prompts.
    "chat.mcp.access": "none",
    "chat.mcp.autostart": "never",
    "chat.disableAIFeatures": true,
    "hostBridge.servers": options.servers,
    ...(options.sandbox === undefined
      ? {}
      : { "hostBridge.sandbox": options.sandbox }),
  };
  return {
    user: options.vsCodeMcp === true ? { ...user, ...VS_CODE_MCP } : user,
    machine: { "hostBridge.python": options.python ?? PYTHON },
  };
}

/** Playwright's `test` with `folders` (a fresh two-folder workspace) and `openEditor` (code-server in the page). */
export const test = base.extend<{
  folders: Folders;
  openEditor: (options: EditorOptions) => Promise<Workbench>;
}>({
  folders: async ({}, use) => {
    const folders = makeFolders();
    await use(folders);
    rmSync(folders.root, { recursive: true, force: true });
  },

  openEditor: async ({ page, folders }, use, testInfo) => {
    const servers: CodeServer[] = [];
    await use(async (options) => {
      const userDataDir = path.join(
        folders.root,
        `user-data-${servers.length}`,
      );
      const server = await CodeServer.start(
        userDataDir,
        EXTENSIONS_DIR,
        editorSettings(options),
        options.env,
      );
      servers.push(server);
      return Workbench.open(
        page,
        server,
        options.folder === undefined ? { workspace: folders.workspaceFile } : { folder: folders[options.folder] },
      );
    });
    for (const server of servers) {
      await server.stop();
      // Kept in test-results/<test>/ for every test, and listed in the report when one fails.
      const prefix =
        servers.length > 1 ? `${path.basename(server.userDataDir)}-` : "";
      // Every log code-server and its extension hosts wrote, as they are, for a look at what took the time.
      const logs = path.join(server.userDataDir, "logs");
      if (existsSync(logs)) {
        cpSync(logs, testInfo.outputPath(`${prefix}logs`), { recursive: true });
      }
      for (const [name, body] of [
        ["extension.log", server.extensionLog()],
        ["code-server.log", server.printed],
        ["audit.jsonl", readAudit(server)],
      ] as const) {
        const file = testInfo.outputPath(prefix + name);
        writeFileSync(file, body);
        await testInfo.attach(prefix + name, {
          path: file,
          contentType: "text/plain",
        });
      }
    }
  },
});

export { expect } from "@playwright/test";

function readAudit(server: CodeServer): string {
  try {
    return readFileSync(path.join(server.storageDir, "audit.jsonl"), "utf8");
  } catch {
    return "";
  }
}

/** One `roots/list` answer the sidecar gave, from its audit log. */
export interface AuditedAnswer {
  readonly server: string;
  readonly roots: readonly string[];
}

/** The `roots/list` answers the sidecar gave so far, oldest first. */
export function auditedAnswers(server: CodeServer): AuditedAnswer[] {
  return readAudit(server)
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map(
      (line) =>
        JSON.parse(line) as {
          server: string;
          roots: (string | { uri: string })[];
        },
    )
    .map((entry) => ({
      server: entry.server,
      roots: entry.roots.map((root) =>
        typeof root === "string" ? root : root.uri,
      ),
    }));
}
