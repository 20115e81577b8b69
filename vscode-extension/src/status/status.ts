// The status bar item, the status picker ("MCP: Show Server Status") and "MCP: Restart Host Bridge". The texts
// come from statusModel.ts.
import * as vscode from "vscode";
import type { CommandId } from "../commandIds";
import type { Ctx } from "../ctx";
import * as protocol from "../protocol";
import type { Sidecar } from "../sidecar/sidecar";
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
    );
    this.render();
    this.item.show();
  }

  /** "MCP: Show Server Status", while marked as an open picker. */
  show(): Promise<void> {
    return this.ctx.pickers.during(() => this.showStatus());
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
      picks.push({ ...serverPickTexts(server), run: () => this.showServerActions(server.id) });
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
            : "No MCP servers are known",
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
    const picked = await vscode.window.showQuickPick(serverActions(server, this.ctx.sidecarState), {
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
    }
  }
}
