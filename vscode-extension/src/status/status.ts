// The status bar item, the status picker ("MCP: Show Server Status") and "MCP: Restart Host Bridge". The texts
// come from statusModel.ts.
import * as vscode from "vscode";
import type { CommandId } from "../commandIds";
import type { Ctx } from "../ctx";
import * as protocol from "../protocol";
import type { Sidecar } from "../sidecar/sidecar";
import type { HandOver } from "../vscodeMcp/handOver";
import {
  type ServerActionId,
  sandboxMessage,
  serverActions,
  serverPickTexts,
  sidecarPickTexts,
  serverLabel,
  statusBarView,
} from "./statusModel";
import { errorMessage, noIcons, product, visible } from "../text";
import type { WorkspaceTrustWait } from "../consent/workspaceTrust";
import { waitingPicks } from "../consent/workspaceTrustModel";

/** Commands a tooltip link may run. */
const TOOLTIP_COMMANDS: CommandId[] = ["hostBridge.showStatus", "hostBridge.showLog", "hostBridge.restartSidecar"];

type StatusPick = vscode.QuickPickItem & { run?: () => Promise<void> };

/** The status bar item (shown for the extension's lifetime, redrawn as the sidecar and servers change) and the status picker. */
export class StatusView {
  private readonly item = vscode.window.createStatusBarItem("hostBridge.status", vscode.StatusBarAlignment.Right, 100);

  constructor(
    private readonly ctx: Ctx,
    private readonly sidecar: Sidecar,
    private readonly trust: WorkspaceTrustWait,
    private readonly handOver: HandOver,
  ) {
    this.item.name = "MCP Host Bridge";
    this.item.command = "hostBridge.showStatus" satisfies CommandId;
    const render = (): void => this.render();
    ctx.pushExtCleanup(
      this.item,
      ctx.onServerChanged(render),
      ctx.onStateChanged(render),
      ctx.onStarted(render),
      trust.onDidChange(render),
      handOver.onDidChange(render),
    );
    this.render();
    this.item.show();
  }

  /** "MCP: Show Server Status", while marked as an open picker. */
  show(): Promise<void> {
    return this.ctx.pickers.during(() => this.showStatus());
  }

  /**
   * "Add a server…": the user settings (JSON) opened at `hostBridge.servers`, which VS Code adds (as `{}`) if it is
   * not there yet; a server entry written there starts without a restart.
   */
  async addServer(): Promise<void> {
    await vscode.commands.executeCommand("workbench.action.openSettingsJson", {
      revealSetting: { key: "hostBridge.servers", edit: true },
    });
  }

  /** "MCP: Restart Host Bridge" (also offered by the status picker and a failed start's message). */
  async restartSidecar(): Promise<void> {
    try {
      await this.sidecar.restart();
    } catch (error) {
      this.ctx.showError("Could not restart the host bridge", error);
    }
  }

  private render(): void {
    const view = statusBarView(
      this.ctx.sidecarState,
      [...this.ctx.servers.values()],
      this.sidecar.pid,
      this.trust.waiting,
      this.ctx.statusKnown,
      (id) => this.handOver.stateOf(id),
    );
    this.item.text = view.text;
    const tooltip = new vscode.MarkdownString(view.tooltip);
    tooltip.isTrusted = { enabledCommands: TOOLTIP_COMMANDS };
    this.item.tooltip = tooltip;
    this.item.backgroundColor = view.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }

  /** The status picker: the sidecar's problem (if any), then every server; picking a server offers its actions. */
  private async showStatus(): Promise<void> {
    const restartSidecar = (): Promise<void> => this.restartSidecar();
    if (this.ctx.sidecarState.kind === "running") {
      try {
        await this.ctx.status();
      } catch (error) {
        this.ctx.log.warn(`Could not refresh the MCP servers' status: ${errorMessage(error)}`);
      }
    }
    const picks: StatusPick[] = [];
    const sidecarTexts = sidecarPickTexts(this.ctx.sidecarState);
    if (sidecarTexts !== undefined) {
      picks.push({ ...sidecarTexts, run: restartSidecar });
    }
    const servers = [...this.ctx.servers.values()];
    if (servers.length > 0) {
      picks.push({ label: "Servers", kind: vscode.QuickPickItemKind.Separator });
    }
    for (const server of servers) {
      picks.push({
        ...serverPickTexts(server, new Date(), this.handOver.stateOf(server.id)),
        run: () => this.showServerActions(server.id),
      });
    }
    if (this.handOver.pending) {
      picks.push({
        label: "$(arrow-swap) Hand over this workspace's servers from VS Code",
        description: "VS Code's own MCP support runs its own copies, outside per-folder consent",
        run: () => this.handOver.handOverAll(),
      });
    }
    const waiting = waitingPicks(this.trust.waiting);
    if (waiting.length > 0) {
      picks.push({ label: "Waiting for workspace trust", kind: vscode.QuickPickItemKind.Separator });
      for (const pick of waiting) {
        picks.push({
          ...pick,
          run: async () => {
            await vscode.commands.executeCommand("workbench.trust.manage");
          },
        });
      }
    }
    if (servers.length === 0 && waiting.length === 0 && this.ctx.sidecarState.kind === "running") {
      picks.push({
        label: "$(add) Add a server…",
        description: "opens hostBridge.servers in your user settings",
        run: () => this.addServer(),
      });
    }
    picks.push(
      { label: "Host bridge", kind: vscode.QuickPickItemKind.Separator },
      { label: "$(output) Show log", run: async () => this.ctx.log.show() },
      { label: "$(refresh) Restart host bridge", description: "restarts every server", run: restartSidecar },
    );
    const picked = await vscode.window.showQuickPick(picks, {
      title: product("MCP Server Status"),
      placeHolder:
        servers.length > 0
          ? "Pick a server for its actions"
          : waiting.length > 0
            ? "No MCP server runs: the workspace's servers wait for workspace trust"
            : "No MCP server is configured yet: add one in your settings or in .vscode/mcp.json",
      matchOnDescription: true,
      matchOnDetail: true,
    });
    await picked?.run?.();
  }

  private async showServerActions(serverId: string): Promise<void> {
    const server = this.ctx.servers.get(serverId);
    if (server === undefined) {
      return;
    }
    const actions = serverActions(server, this.ctx.sidecarState, new Date(), this.handOver.stateOf(server.id));
    const picked = await vscode.window.showQuickPick(actions, {
      title: product(`MCP Server ${noIcons(visible(serverLabel(server)))}`),
      placeHolder: "Pick an action",
    });
    if (picked !== undefined) {
      await this.runServerAction(picked.id, server);
    }
  }

  private async runServerAction(action: ServerActionId, server: protocol.ServerStatus): Promise<void> {
    switch (action) {
      case "sandbox": {
        const { message, detail } = sandboxMessage(server);
        await vscode.window.showInformationMessage(message, { modal: true, detail });
        return;
      }
      case "restartServer":
        try {
          await this.ctx.request(protocol.restartServer, { server: server.id });
        } catch (error) {
          this.ctx.showError(`Could not restart the MCP server “${visible(serverLabel(server))}”`, error);
        }
        return;
      case "showLog":
        this.ctx.log.show();
        return;
      case "folders":
      case "manageFolders":
        await vscode.commands.executeCommand("hostBridge.manageSharedFolders" satisfies CommandId, server.id);
        return;
      case "restartSidecar":
        await this.restartSidecar();
        return;
      case "handOver":
        await this.handOver.handOverAll();
        return;
      case "giveBack":
        await this.handOver.giveBack(server.id);
        return;
    }
  }
}
