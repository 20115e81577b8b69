// VS Code's own MCP support and host_bridge: every server the sidecar runs (and the user trusted) is offered to
// VS Code as a stdio server that runs `host_bridge attach <id>` the way the sidecar is run, so VS Code's chat uses
// the sidecar's one live connection under per-folder consent instead of a second process. A server of the
// workspace's .vscode/mcp.json or .mcp.json, which VS Code also runs as its own copy, is offered only once the user
// handed it over (handOver.ts), so that VS Code never lists, lists the tools of, or browses the resources of two
// copies of it. The definitions come from mcpServersModel.ts.
//
// `vscode.lm.registerMcpServerDefinitionProvider` and `vscode.McpStdioServerDefinition` exist from VS Code 1.101;
// this extension supports 1.95, so they are declared here (the part used) and looked up at run time.
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import type { HandOver } from "./handOver";
import {
  type AttachDefinition,
  type AttachTarget,
  attachDefinitions,
  PROVIDER_ID,
  definitionsKey,
} from "./mcpServersModel";
import type { Sidecar } from "../sidecar/sidecar";
import { errorMessage } from "../text";

/** `vscode.McpStdioServerDefinition` (VS Code ≥ 1.101), the part this extension uses. */
interface McpStdioServerDefinition {
  readonly label: string;
  command: string;
  args: string[];
  cwd?: vscode.Uri;
  version?: string;
}

type McpStdioServerDefinitionClass = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => McpStdioServerDefinition;

/** `vscode.McpServerDefinitionProvider` for stdio definitions. */
interface McpServerDefinitionProvider {
  readonly onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): vscode.ProviderResult<McpStdioServerDefinition[]>;
  resolveMcpServerDefinition?(
    server: McpStdioServerDefinition,
    token: vscode.CancellationToken,
  ): vscode.ProviderResult<McpStdioServerDefinition>;
}

/** The MCP part of the API where this VS Code has it. */
interface McpApi {
  registerMcpServerDefinitionProvider(id: string, provider: McpServerDefinitionProvider): vscode.Disposable;
  McpStdioServerDefinition: McpStdioServerDefinitionClass;
}

/** The MCP API of the running VS Code, or `undefined` (VS Code before 1.101, code-server builds without it). */
export function mcpApi(): McpApi | undefined {
  const lm = (vscode as { lm?: unknown }).lm as { registerMcpServerDefinitionProvider?: unknown } | undefined;
  const definitionClass = (vscode as { McpStdioServerDefinition?: unknown }).McpStdioServerDefinition;
  const register = lm?.registerMcpServerDefinitionProvider;
  if (typeof register !== "function" || typeof definitionClass !== "function") {
    return undefined;
  }
  return {
    registerMcpServerDefinitionProvider: (id, provider) =>
      (register as McpApi["registerMcpServerDefinitionProvider"]).call(lm, id, provider),
    McpStdioServerDefinition: definitionClass as McpStdioServerDefinitionClass,
  };
}

/** How long VS Code's first question waits for the sidecar's server list (a first start may install Python packages). */
const STATUS_WAIT_MS = 60_000;

/** Whether VS Code lists host_bridge's servers here: its MCP API is there, and this is not Windows. */
export function vsCodeListsServers(api: McpApi | undefined = mcpApi()): boolean {
  return api !== undefined && process.platform !== "win32";
}

/**
 * Offers the sidecar's servers to VS Code's MCP support (where the API exists), leaving out those VS Code runs its
 * own copy of until they are handed over. Everything it registers ends with the extension's lifetime ({@link Ctx}).
 */
export class VsCodeMcp {
  private readonly changed = new vscode.EventEmitter<void>();
  private definitions: AttachDefinition[] = [];
  private key = definitionsKey([]);

  constructor(
    private readonly ctx: Ctx,
    private readonly sidecar: Sidecar,
    private readonly handOver: HandOver,
    api: McpApi | undefined = mcpApi(),
  ) {
    ctx.pushExtCleanup(this.changed);
    const refresh = (): void => this.refresh();
    ctx.pushExtCleanup(
      ctx.onStarted(refresh),
      ctx.onServerChanged(refresh),
      handOver.onDidChange(refresh),
      vscode.workspace.onDidChangeWorkspaceFolders(refresh),
    );
    if (api === undefined) {
      ctx.log.info(
        "this VS Code has no MCP server definition API (VS Code 1.101 or newer has it); its chat does not list host_bridge's servers",
      );
    } else if (process.platform === "win32") {
      ctx.log.info(
        "VS Code's chat does not list host_bridge's servers on Windows: the sidecar's gateway needs a Unix socket",
      );
    } else {
      this.register(api);
    }
  }

  private register(api: McpApi): void {
    const provider: McpServerDefinitionProvider = {
      onDidChangeMcpServerDefinitions: this.changed.event,
      provideMcpServerDefinitions: async (token) => {
        await this.whenStatusKnown(token);
        this.refresh();
        return this.definitions.map((definition) => toVsCode(api, definition));
      },
      resolveMcpServerDefinition: async (server, token) => {
        await this.whenStatusKnown(token);
        this.refresh();
        const current = this.definitions.find((definition) => definition.label === server.label);
        if (current === undefined) {
          this.ctx.log.warn(`VS Code asked to start “${server.label}”, which the sidecar no longer offers`);
          return undefined;
        }
        this.ctx.log.info(`VS Code starts “${current.label}” through host-bridge attach`);
        return toVsCode(api, current);
      },
    };
    try {
      this.ctx.pushExtCleanup(api.registerMcpServerDefinitionProvider(PROVIDER_ID, provider));
    } catch (error) {
      this.ctx.log.warn(`could not offer host_bridge's servers to VS Code's MCP support: ${errorMessage(error)}`);
    }
  }

  /** Where `attach` finds this window's sidecar; none before the sidecar's command is known or without a folder. */
  private target(): AttachTarget | undefined {
    const sidecar = this.sidecar.command;
    const folder = vscode.workspace.workspaceFolders?.find((candidate) => candidate.uri.scheme === "file");
    if (sidecar === undefined || folder === undefined) {
      return undefined;
    }
    return { sidecar, workspace: folder.uri.fsPath, storageDir: this.ctx.extension.globalStorageUri.fsPath };
  }

  /**
   * Recompute the definitions from the sidecar's servers and tell VS Code when they changed. While the sidecar
   * is (re)starting the last ones stay, so that VS Code does not stop and start its servers for a restart.
   */
  private refresh(): void {
    if (!this.ctx.statusKnown) {
      return;
    }
    const servers = [...this.ctx.servers.values()].filter((server) => this.handOver.offered(server.id));
    const definitions = attachDefinitions(servers, this.target());
    const key = definitionsKey(definitions);
    if (key !== this.key) {
      this.definitions = definitions;
      this.key = key;
      this.changed.fire();
    }
  }

  /** Resolve once the running sidecar's server list is known, it failed, or after {@link STATUS_WAIT_MS}. */
  private whenStatusKnown(token: vscode.CancellationToken): Promise<void> {
    if (this.ctx.statusKnown || this.ctx.sidecarState.kind === "failed") {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const listeners: vscode.Disposable[] = [];
      const timer = setTimeout(done, STATUS_WAIT_MS);
      function done(): void {
        clearTimeout(timer);
        for (const listener of listeners.splice(0)) {
          listener.dispose();
        }
        resolve();
      }
      listeners.push(
        this.ctx.onStarted(done),
        this.ctx.onStateChanged((state) => {
          if (state.kind === "failed") {
            done();
          }
        }),
        token.onCancellationRequested(done),
      );
    });
  }
}

function toVsCode(api: McpApi, definition: AttachDefinition): McpStdioServerDefinition {
  const server = new api.McpStdioServerDefinition(
    definition.label,
    definition.command,
    definition.args,
    {},
    definition.version,
  );
  server.cwd = vscode.Uri.file(definition.cwd);
  return server;
}
