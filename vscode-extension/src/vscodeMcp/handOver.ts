// One copy of each server: VS Code's own MCP support also runs the servers of the workspace's .vscode/mcp.json and
// .mcp.json as its own copies, outside per-folder consent and the sandbox. This feature tells the user so (a notice
// naming every such server), and "Hand Over" stops VS Code's copies at once (`workbench.mcp.stopServer`, every
// server of the files in one action), remembers it for the workspace, offers host_bridge's copy to VS Code instead,
// and stops VS Code's copy again whenever it is seen running (VS Code offers extensions no way to disable it: see
// vsCodeCopies.ts). The rules and texts come from vsCodeCopies.ts.
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import { errorMessage, product, visible } from "../text";
import { childProcesses } from "./childProcesses";
import type { CopyState } from "../status/statusModel";
import {
  type CopyMemory,
  HandOverChoice,
  type VsCodeCopy,
  copiesToNotice,
  copyMemory,
  copyStates,
  handOverNotice,
  handedOverMessage,
  offeredToVsCode,
  SHOW_SERVERS,
  runsServer,
  vsCodeCopies,
  vsCodeMcpOn,
} from "./vsCodeCopies";

/** workspaceState key: the servers handed over and those the user said "Not Now" about ({@link CopyMemory}). */
const MEMORY_KEY = "hostBridge.vsCodeCopies";

/** How often the extension host's children are looked at while a server is handed over. */
const WATCH_MS = 3_000;

/** VS Code's command that stops one of its MCP servers by its definition id. */
const STOP_SERVER = "workbench.mcp.stopServer";

/** The copies VS Code's own MCP support runs, and their hand-over to MCP Host Bridge. */
export class HandOver implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** The hand-over changed: what is offered to VS Code and what the status says. */
  readonly onDidChange = this.changed.event;
  private copies: VsCodeCopy[] = [];
  private noticeOpen = false;
  private watch: ReturnType<typeof setInterval> | undefined;
  /** Servers whose copy was found running again and stopped, in this window (said once each). */
  private readonly restopped = new Set<string>();

  /**
   * `listed`: VS Code also lists host_bridge's servers (its MCP API is there); `sidecarPid` is the sidecar's process,
   * which is no copy.
   */
  constructor(
    private readonly ctx: Ctx,
    private readonly listed: boolean,
    private readonly sidecarPid: () => number | undefined,
  ) {
    const refresh = (): void => this.refresh();
    ctx.pushExtCleanup(
      this,
      this.changed,
      ctx.onStarted(refresh),
      ctx.onServerChanged(refresh),
      vscode.workspace.onDidChangeWorkspaceFolders(refresh),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("chat.mcp")) {
          refresh();
        }
      }),
    );
  }

  /** How `serverId` stands with VS Code's own copy of it; undefined when VS Code runs none. */
  stateOf(serverId: string): CopyState | undefined {
    return copyStates(this.copies, this.memory).get(serverId);
  }

  /** Whether host_bridge's copy of `serverId` is offered to VS Code: not while VS Code runs its own. */
  offered(serverId: string): boolean {
    return offeredToVsCode(this.copies, this.memory)(serverId);
  }

  /** Whether any server of the workspace's files can be handed over now (VS Code runs its own copy of it). */
  get pending(): boolean {
    return this.copies.some((copy) => this.stateOf(copy.id) !== "handedOver");
  }

  /**
   * Hand every server of the workspace's files over to MCP Host Bridge in one action: VS Code's copies are stopped
   * now, and again whenever one is seen running; host_bridge's copies are offered to VS Code instead.
   */
  async handOverAll(): Promise<void> {
    if (this.copies.length === 0) {
      void vscode.window.showInformationMessage(
        product("VS Code's own MCP support runs no copy of this workspace's MCP servers: nothing to hand over."),
      );
      return;
    }
    const memory = this.memory;
    const keys = this.copies.map((copy) => copy.key);
    await this.remember({
      handedOver: [...new Set([...memory.handedOver, ...keys])],
      dismissed: memory.dismissed.filter((key) => !keys.includes(key)),
    });
    const copies = this.copies;
    await this.stopCopies(copies);
    this.ctx.log.info(
      `handed over to MCP Host Bridge: ${copies.map((copy) => copy.id).join(", ")}; VS Code's own copies are stopped`,
    );
    this.changed.fire();
    this.updateWatch();
    void vscode.window.showInformationMessage(handedOverMessage(copies), SHOW_SERVERS).then(async (choice) => {
      if (choice === SHOW_SERVERS) {
        await showVsCodeServers();
      }
    });
  }

  /** Let VS Code run its own copy of `serverId` again: host_bridge's is no longer offered to it. */
  async giveBack(serverId: string): Promise<void> {
    const copy = this.copies.find((each) => each.id === serverId);
    if (copy === undefined) {
      return;
    }
    const memory = this.memory;
    await this.remember({
      handedOver: memory.handedOver.filter((key) => key !== copy.key),
      dismissed: [...memory.dismissed, copy.key],
    });
    this.changed.fire();
    this.updateWatch();
  }

  dispose(): void {
    if (this.watch !== undefined) {
      clearInterval(this.watch);
      this.watch = undefined;
    }
  }

  private get memory(): CopyMemory {
    return copyMemory(this.ctx.extension.workspaceState.get<unknown>(MEMORY_KEY));
  }

  private async remember(memory: CopyMemory): Promise<void> {
    await this.ctx.extension.workspaceState.update(MEMORY_KEY, memory);
  }

  /** Recompute the copies from the sidecar's servers; tell the user about new ones. */
  private refresh(): void {
    if (!this.ctx.statusKnown) {
      return;
    }
    const before = JSON.stringify(this.copies);
    this.copies = vsCodeOn() ? vsCodeCopies([...this.ctx.servers.values()], workspaceFolders()) : [];
    if (JSON.stringify(this.copies) !== before) {
      this.changed.fire();
    }
    this.updateWatch();
    this.notice();
  }

  /**
   * Say once which servers VS Code runs its own copy of, with the action that hands them all over; after the consent
   * questions being asked (their modal dialogs would hide it) and the extension's pickers.
   */
  private notice(): void {
    if (this.noticeOpen || copiesToNotice(this.copies, this.memory).length === 0) {
      return;
    }
    if (this.ctx.prompts.busy || this.ctx.pickers.busy) {
      this.noticeOpen = true;
      void Promise.all([this.ctx.prompts.whenClosed(), this.ctx.pickers.whenClosed()]).then(() => {
        this.noticeOpen = false;
        this.notice();
      });
      return;
    }
    const fresh = copiesToNotice(this.copies, this.memory);
    this.noticeOpen = true;
    const message = handOverNotice(fresh, this.listed);
    this.ctx.log.warn(message);
    void vscode.window
      .showWarningMessage(message, HandOverChoice.handOver, HandOverChoice.notNow)
      .then(async (choice) => {
        this.noticeOpen = false;
        if (choice === HandOverChoice.handOver) {
          await this.handOverAll();
          return;
        }
        // "Not Now", or the notice closed: not said again about these; the status offers the hand-over.
        const memory = this.memory;
        await this.remember({ ...memory, dismissed: [...new Set([...memory.dismissed, ...fresh.map((c) => c.key)])] });
        this.changed.fire();
      });
  }

  /** Stop VS Code's copy of each of `copies` (a copy that does not run, or an id VS Code does not know, is no error). */
  private async stopCopies(copies: readonly VsCodeCopy[]): Promise<void> {
    for (const copy of copies) {
      for (const id of copy.definitionIds) {
        try {
          await vscode.commands.executeCommand(STOP_SERVER, id);
        } catch (error) {
          this.ctx.log.warn(`could not stop VS Code's copy of “${copy.id}” (${id}): ${errorMessage(error)}`);
        }
      }
    }
  }

  /** Look at the extension host's children every few seconds while a server is handed over, else not at all. */
  private updateWatch(): void {
    const handed = this.copies.some((copy) => this.stateOf(copy.id) === "handedOver");
    if (handed && this.watch === undefined) {
      this.watch = setInterval(() => void this.stopRunningCopies(), WATCH_MS);
    } else if (!handed && this.watch !== undefined) {
      clearInterval(this.watch);
      this.watch = undefined;
    }
  }

  /** Stop each handed-over server's copy that VS Code started again (its chat, Browse Resources, or the user). */
  private async stopRunningCopies(): Promise<void> {
    const handed = this.copies.filter((copy) => this.stateOf(copy.id) === "handedOver");
    if (handed.length === 0) {
      return;
    }
    const sidecar = this.sidecarPid();
    const children = (await childProcesses()).filter((child) => child.pid !== sidecar);
    const running = handed.filter((copy) => {
      const server = this.ctx.servers.get(copy.id);
      return server !== undefined && children.some((child) => runsServer(child.commandLine, server));
    });
    if (running.length === 0) {
      return;
    }
    await this.stopCopies(running);
    for (const copy of running) {
      this.ctx.log.warn(`VS Code started its own copy of “${copy.id}” again; stopped it (it is handed over)`);
      if (!this.restopped.has(copy.key)) {
        this.restopped.add(copy.key);
        void vscode.window.showInformationMessage(
          product(
            `VS Code started its own copy of “${visible(copy.id)}” again, outside per-folder consent; it was stopped, since you handed that server over. To let VS Code run it, choose “Let VS Code run its own copy” in “MCP: Show Server Status”.`,
          ),
        );
      }
    }
  }
}

/** VS Code's own commands that show its MCP servers, best first (both exist in VS Code 1.139). */
const SERVER_VIEWS = ["workbench.mcp.showInstalledServers", "workbench.mcp.listServer"];

async function showVsCodeServers(): Promise<void> {
  const available = new Set(await vscode.commands.getCommands(true));
  const command = SERVER_VIEWS.find((id) => available.has(id));
  if (command !== undefined) {
    await vscode.commands.executeCommand(command);
  }
}

function vsCodeOn(): boolean {
  const chat = vscode.workspace.getConfiguration("chat.mcp");
  return vsCodeMcpOn(chat.get<unknown>("access"), chat.get<unknown>("enabled"));
}

function workspaceFolders(): { uri: string; name: string; index: number }[] {
  return (vscode.workspace.workspaceFolders ?? []).map((folder) => ({
    uri: folder.uri.toString(),
    name: folder.name,
    index: folder.index,
  }));
}
