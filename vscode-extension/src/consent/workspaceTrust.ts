// Restricted Mode: the workspace's MCP server files (.vscode/mcp.json, .mcp.json) and the servers they name, which
// wait for workspace trust. Only the files' server ids are read, to say what trusting the workspace starts; in a
// trusted workspace nothing is read here (the host bridge reads the files then). The wording comes from
// workspaceTrustModel.ts.
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import { errorMessage } from "../text";
import { WORKSPACE_SERVER_FILES, type WaitingFile, type WaitingForTrust, serverIdsIn } from "./workspaceTrustModel";

/** A file larger than this is not read: its servers are named by the file only. */
const MAX_FILE_BYTES = 256 * 1024;

/** What waits for workspace trust now, followed for the extension's lifetime. */
export class WorkspaceTrustWait {
  private current: WaitingForTrust = [];
  private generation = 0;
  private readonly changed = new vscode.EventEmitter<void>();
  /** What waits for workspace trust changed. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly ctx: Ctx) {
    const watcher = vscode.workspace.createFileSystemWatcher(
      `**/{${WORKSPACE_SERVER_FILES.map((file) => file.path).join(",")}}`,
    );
    const refresh = (): void => void this.refresh();
    ctx.pushExtCleanup(
      this.changed,
      watcher,
      watcher.onDidCreate(refresh),
      watcher.onDidChange(refresh),
      watcher.onDidDelete(refresh),
      vscode.workspace.onDidGrantWorkspaceTrust(refresh),
      vscode.workspace.onDidChangeWorkspaceFolders(refresh),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("hostBridge.readWorkspaceConfig")) {
          refresh();
        }
      }),
    );
    refresh();
  }

  /** The workspace files whose servers wait for workspace trust; none in a trusted workspace. */
  get waiting(): WaitingForTrust {
    return this.current;
  }

  private async refresh(): Promise<void> {
    this.generation += 1;
    const generation = this.generation;
    let found: WaitingFile[];
    try {
      found = await this.find();
    } catch (error) {
      this.ctx.log.warn(`Could not look for the workspace's MCP server files: ${errorMessage(error)}`);
      found = [];
    }
    if (generation === this.generation && JSON.stringify(found) !== JSON.stringify(this.current)) {
      this.current = found;
      this.changed.fire();
    }
  }

  private async find(): Promise<WaitingFile[]> {
    const config = vscode.workspace.getConfiguration("hostBridge");
    if (vscode.workspace.isTrusted || !config.get<boolean>("readWorkspaceConfig", true)) {
      return [];
    }
    const files: WaitingFile[] = [];
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      for (const { path, key } of WORKSPACE_SERVER_FILES) {
        const uri = vscode.Uri.joinPath(folder.uri, path);
        let stat: vscode.FileStat;
        try {
          stat = await vscode.workspace.fs.stat(uri);
        } catch {
          continue;
        }
        if ((stat.type & vscode.FileType.File) === 0) {
          continue;
        }
        const shown = `${folder.name}/${path}`;
        if (stat.size > MAX_FILE_BYTES) {
          files.push({ path: shown });
          continue;
        }
        try {
          const names = serverIdsIn(new TextDecoder("utf-8").decode(await vscode.workspace.fs.readFile(uri)), key);
          files.push(names === undefined ? { path: shown } : { path: shown, names });
        } catch {
          files.push({ path: shown });
        }
      }
    }
    return files;
  }
}
