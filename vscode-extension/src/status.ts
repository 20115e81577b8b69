// The status bar item and the commands "MCP: Show Server Status", "MCP: Show Host Bridge Log" and
// "MCP: Restart Host Bridge". The texts come from statusModel.ts.
import * as vscode from "vscode";
import type { Sidecar } from "./sidecar";
import type { Ctx } from "./ctx";
import * as protocol from "./protocol";
import {
  type ServerActionId,
  serverActions,
  serverPickTexts,
  sidecarPickTexts,
  serverLabel,
  statusBarView,
} from "./statusModel";
import { errorMessage, noIcons, product, visible } from "./text";

/** Commands a tooltip link may run. */
const TOOLTIP_COMMANDS = ["hostBridge.showStatus", "hostBridge.showLog", "hostBridge.restartSidecar"];

type StatusPick = vscode.QuickPickItem & { run?: () => Promise<void> };

/** Register the status bar item and the status, log and restart commands. */
export function registerStatus(ctx: Ctx, sidecar: Sidecar): void {
  const item = vscode.window.createStatusBarItem("hostBridge.status", vscode.StatusBarAlignment.Right, 100);
  item.name = "MCP Host Bridge";
  item.command = "hostBridge.showStatus";

  const render = (): void => {
    const view = statusBarView(ctx.sidecarState, [...ctx.servers.values()], sidecar.pid);
    item.text = view.text;
    const tooltip = new vscode.MarkdownString(view.tooltip);
    tooltip.isTrusted = { enabledCommands: TOOLTIP_COMMANDS };
    item.tooltip = tooltip;
    item.backgroundColor = view.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  };

  const restartSidecar = async (): Promise<void> => {
    try {
      await sidecar.restart();
    } catch (error) {
      ctx.showError("Could not restart the host bridge", error);
    }
  };

  ctx.pushExtCleanup(
    item,
    ctx.onServerChanged(render),
    ctx.onStateChanged(render),
    ctx.onStarted(render),
    vscode.commands.registerCommand("hostBridge.showStatus", () =>
      ctx.pickers.during(() => showStatus(ctx, restartSidecar)),
    ),
    vscode.commands.registerCommand("hostBridge.showLog", () => ctx.log.show()),
    vscode.commands.registerCommand("hostBridge.restartSidecar", restartSidecar),
  );
  render();
  item.show();
}

/** The status picker: the sidecar's problem (if any), then every server; picking a server offers its actions. */
async function showStatus(ctx: Ctx, restartSidecar: () => Promise<void>): Promise<void> {
  if (ctx.sidecarState.kind === "running") {
    try {
      await ctx.status();
    } catch (error) {
      ctx.log.warn(`Could not refresh the MCP servers' status: ${errorMessage(error)}`);
    }
  }
  const picks: StatusPick[] = [];
  const sidecarTexts = sidecarPickTexts(ctx.sidecarState);
  if (sidecarTexts !== undefined) {
    picks.push({ ...sidecarTexts, run: restartSidecar });
  }
  const servers = [...ctx.servers.values()];
  if (servers.length > 0) {
    picks.push({ label: "Servers", kind: vscode.QuickPickItemKind.Separator });
  }
  for (const server of servers) {
    picks.push({ ...serverPickTexts(server), run: () => showServerActions(ctx, server.id, restartSidecar) });
  }
  picks.push(
    { label: "Host bridge", kind: vscode.QuickPickItemKind.Separator },
    { label: "$(output) Show log", run: async () => ctx.log.show() },
    { label: "$(refresh) Restart host bridge", description: "restarts every server", run: restartSidecar },
  );
  const picked = await vscode.window.showQuickPick(picks, {
    title: product("MCP Server Status"),
    placeHolder: servers.length === 0 ? "No MCP servers are known" : "Pick a server for its actions",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  await picked?.run?.();
}

async function showServerActions(ctx: Ctx, serverId: string, restartSidecar: () => Promise<void>): Promise<void> {
  const server = ctx.servers.get(serverId);
  if (server === undefined) {
    return;
  }
  const picked = await vscode.window.showQuickPick(serverActions(server, ctx.sidecarState), {
    title: product(`MCP Server ${noIcons(visible(serverLabel(server)))}`),
    placeHolder: "Pick an action",
  });
  if (picked !== undefined) {
    await runServerAction(ctx, picked.id, server, restartSidecar);
  }
}

async function runServerAction(
  ctx: Ctx,
  action: ServerActionId,
  server: protocol.ServerStatus,
  restartSidecar: () => Promise<void>,
): Promise<void> {
  switch (action) {
    case "restartServer":
      try {
        await ctx.request(protocol.restartServer, { server: server.id });
      } catch (error) {
        ctx.showError(`Could not restart the MCP server “${visible(serverLabel(server))}”`, error);
      }
      return;
    case "showLog":
      ctx.log.show();
      return;
    case "manageFolders":
      await vscode.commands.executeCommand("hostBridge.manageSharedFolders", server.id);
      return;
    case "restartSidecar":
      await restartSidecar();
      return;
  }
}
