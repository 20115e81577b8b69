// Consent UI: answers `hostBridge/askConsent` (trust, then folders) one prompt at a time, and the command
// "MCP: Manage Shared Folders". What is shown and answered comes from consentModel; this file only drives
// the dialogs and pickers.
import * as os from "node:os";
import * as vscode from "vscode";
import type { Ctx } from "./ctx";
import {
  Choice,
  LeftPrivate,
  PromptQueue,
  changeSummary,
  decisionOfChoice,
  decisionsFor,
  folderChoices,
  folderDetail,
  folderItem,
  folderQuestion,
  foldersWereAsked,
  homeRelative,
  manageableFolders,
  serverItem,
  serverName,
  serverNamed,
  sharedFoldersDiff,
  sourceText,
  trustDetail,
  trustOfChoice,
  trustQuestion,
  type FolderItemFields,
} from "./consentModel";
import * as protocol from "./protocol";
import { errorMessage, fileUriPath } from "./text";

/** The cancellation side of a request token (the sidecar's time-out); vscode's and jsonrpc's tokens both fit. */
interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

const NEVER: Cancellation = {
  isCancellationRequested: false,
  onCancellationRequested: () => ({ dispose: () => undefined }),
};

type FolderPickItem = vscode.QuickPickItem & { uri: string };
type AllowKind = "allow" | "allowSession";

/** Install the `hostBridge/askConsent` handler and the "MCP: Manage Shared Folders" command. */
export function registerConsent(ctx: Ctx): void {
  const queue = new PromptQueue();
  const leftPrivate = new LeftPrivate();
  ctx.setConsentHandler((params, token) =>
    queue.run(async () => {
      const roots = leftPrivate.unasked(params.server, params.roots);
      const skipped = params.roots.length - roots.length;
      if (skipped > 0) {
        ctx.log.info(
          `[${params.server.id}] not asking again about ${skipped} folder(s) left unshared in this window; “MCP: Manage Shared Folders” shares them`,
        );
      }
      if (roots.length === 0 && !params.trustRequired) {
        return { decisions: [] };
      }
      try {
        const result = await askConsent({ ...params, roots }, token);
        if (!token.isCancellationRequested && foldersWereAsked(params.trustRequired, result)) {
          leftPrivate.answered(params.server, roots, result.decisions ?? []);
        }
        return result;
      } catch (error) {
        ctx.log.error(`[${params.server.id}] the consent prompt failed; nothing is shared: ${errorMessage(error)}`);
        return { decisions: [] };
      }
    }),
  );
  ctx.subscriptions.push(
    vscode.commands.registerCommand("hostBridge.manageSharedFolders", (serverId?: unknown) =>
      manageSharedFolders(ctx, serverId),
    ),
  );
}

async function askConsent(
  params: protocol.AskConsentParams,
  token: Cancellation,
): Promise<protocol.AskConsentResult> {
  const { server, roots } = params;
  if (token.isCancellationRequested) {
    // No `trust` at all: the sidecar records nothing and the server keeps waiting for trust.
    return { decisions: [] };
  }
  const home = os.homedir();
  let trust: boolean | undefined;
  if (params.trustRequired) {
    const choice = await untilCancelled(
      token,
      vscode.window.showWarningMessage(
        trustQuestion(server),
        { modal: true, detail: trustDetail(server, sourceText(server.source, fsPath, home)) },
        Choice.trust,
        Choice.dontTrust,
      ),
      () =>
        lateAnswer(
          server,
          "your answer was not recorded and the server was not started; it waits for your trust until the host bridge restarts. Run “MCP: Restart Host Bridge” to be asked again.",
        ),
    );
    const trusted = trustOfChoice(choice);
    if (trusted !== true) {
      return trusted === false ? { trust: false, decisions: [] } : { decisions: [] };
    }
    trust = true;
  }
  const answer = (decisions: protocol.RootDecision[]): protocol.AskConsentResult =>
    trust === undefined ? { decisions } : { trust, decisions };
  if (roots.length === 0) {
    return answer([]);
  }

  const paths = roots.map((root) => homeRelative(fsPath(root.uri), home));
  const choice = await untilCancelled(
    token,
    vscode.window.showInformationMessage(
      folderQuestion(server, roots),
      { modal: true, detail: folderDetail(server, paths) },
      ...folderChoices(roots),
    ),
    () => lateAnswer(server, "nothing was shared. Run “MCP: Manage Shared Folders” to share folders."),
  );
  if (choice !== Choice.chooseFolders) {
    const decision = decisionOfChoice(choice);
    return answer(decision === undefined ? [] : decisionsFor(roots, roots.map((root) => root.uri), decision));
  }

  const title = `Share Folders with ${serverName(server)}`;
  const selected = await pickFolders(
    roots.map((root) => folderItem(root, fsPath(root.uri), home)),
    `${title} (1/2)`,
    "Check the folders this MCP server may use; the others stay private",
    token,
  );
  if (selected === undefined || selected.length === 0) {
    return answer([]);
  }
  const kind = await pickAllowKind(`${title} (2/2)`, selected.length, token);
  return answer(kind === undefined ? [] : decisionsFor(roots, selected, kind));
}

/**
 * "MCP: Manage Shared Folders": check and uncheck the folders shared with one server; `serverId` (from the
 * status picker) skips choosing the server when it names a known one.
 */
async function manageSharedFolders(ctx: Ctx, serverId?: unknown): Promise<void> {
  let server: protocol.ServerStatus | undefined;
  try {
    const status = await ctx.status();
    if (status.servers.length === 0) {
      void vscode.window.showInformationMessage(
        "No MCP servers are configured. Add one in the setting “hostBridge.servers” or in .vscode/mcp.json.",
      );
      return;
    }
    server =
      serverNamed(status.servers, serverId) ??
      (status.servers.length === 1 ? status.servers[0] : await pickServer(status.servers));
    if (server === undefined) {
      return;
    }
    const home = os.homedir();
    const folders = manageableFolders(status.candidates, server.sharedRoots);
    if (folders.length === 0) {
      void vscode.window.showInformationMessage(
        "There is no folder to share: open a folder or a workspace first, then run “MCP: Manage Shared Folders”.",
      );
      return;
    }
    const shared = server.sharedRoots.map((root) => root.uri);
    const sharedSet = new Set(shared);
    const items = folders.map((folder) => folderItem(folder, fsPath(folder.uri), home, sharedSet.has(folder.uri)));
    const title = `Folders Shared with ${serverName(server)}`;
    const selected = await pickFolders(items, title, "Check the folders this MCP server may use", NEVER);
    if (selected === undefined) {
      return;
    }
    let changes = sharedFoldersDiff(shared, selected, "allow");
    if (changes.some((change) => change.decision === "allow")) {
      const added = changes.filter((change) => change.decision === "allow").length;
      const kind = await pickAllowKind(title, added, NEVER);
      if (kind === undefined) {
        return;
      }
      changes = sharedFoldersDiff(shared, selected, kind);
    }
    for (const change of changes) {
      await ctx.request(protocol.setConsent, { server: server.id, uri: change.uri, decision: change.decision });
    }
    const names = new Map(folders.map((folder) => [folder.uri, folder.name]));
    void vscode.window.showInformationMessage(
      changeSummary(server, changes, (uri) => names.get(uri) ?? homeRelative(fsPath(uri), home)),
    );
  } catch (error) {
    const whose = server === undefined ? "" : ` with the MCP server ${serverName(server)}`;
    ctx.showError(`Changing the folders shared${whose} failed`, error);
  }
}

async function pickServer(servers: readonly protocol.ServerStatus[]): Promise<protocol.ServerStatus | undefined> {
  const items = servers.map((status) => ({ ...serverItem(status), status }));
  const picked = await vscode.window.showQuickPick(items, {
    title: "Manage Shared Folders",
    placeHolder: "Choose the MCP server whose shared folders to change",
  });
  return picked?.status;
}

/**
 * A multi-select list of folders, preselected as the items say. Resolves to the checked URIs on accept,
 * `undefined` on Escape or when `token` is cancelled (the picker is closed then).
 */
function pickFolders(
  fields: readonly FolderItemFields[],
  title: string,
  placeholder: string,
  token: Cancellation,
): Promise<string[] | undefined> {
  const items: FolderPickItem[] = fields.map((field) => ({
    uri: field.uri,
    label: field.label,
    description: field.description,
    detail: field.detail,
  }));
  return runPicker<FolderPickItem, string[]>(token, (pick) => {
    pick.canSelectMany = true;
    pick.title = title;
    pick.placeholder = placeholder;
    pick.matchOnDescription = true;
    pick.items = items;
    pick.selectedItems = items.filter((_, index) => fields[index]?.picked === true);
    return () => pick.selectedItems.map((item) => item.uri);
  });
}

/** The last step of sharing: remembered, or for this session only. */
function pickAllowKind(title: string, count: number, token: Cancellation): Promise<AllowKind | undefined> {
  const folders = count === 1 ? "the folder" : `the ${count} folders`;
  const items: (vscode.QuickPickItem & { decision: AllowKind })[] = [
    { label: Choice.allow, description: "remembered until you change it", decision: "allow" },
    {
      label: Choice.allowSession,
      description: "until the host bridge or VS Code restarts",
      decision: "allowSession",
    },
  ];
  return runPicker<(typeof items)[number], AllowKind | undefined>(token, (pick) => {
    pick.title = title;
    pick.placeholder = `Share ${folders} how long?`;
    pick.items = items;
    return () => pick.activeItems[0]?.decision;
  });
}

/**
 * Show a QuickPick set up by `setup`, whose return value reads the answer on accept. Resolves `undefined` when
 * it is hidden (Escape; moving the focus elsewhere does not hide it) or `token` is cancelled; always disposes it.
 */
function runPicker<T extends vscode.QuickPickItem, R>(
  token: Cancellation,
  setup: (pick: vscode.QuickPick<T>) => () => R,
): Promise<R | undefined> {
  if (token.isCancellationRequested) {
    return Promise.resolve(undefined);
  }
  return new Promise<R | undefined>((resolve) => {
    const pick = vscode.window.createQuickPick<T>();
    pick.ignoreFocusOut = true;
    const read = setup(pick);
    let settled = false;
    let disposables: { dispose(): void }[] = [];
    const finish = (value: R | undefined): void => {
      if (settled) {
        return;
      }
      settled = true;
      for (const disposable of disposables) {
        disposable.dispose();
      }
      pick.dispose();
      resolve(value);
    };
    disposables = [
      pick.onDidAccept(() => finish(read())),
      pick.onDidHide(() => finish(undefined)),
      token.onCancellationRequested(() => finish(undefined)),
    ];
    pick.show();
  });
}

/**
 * Wait for a modal's answer, or for `token`: a modal cannot be closed from code, so after a cancellation the
 * answer is ignored and `onLate` tells the user so if they did choose something.
 */
function untilCancelled<T>(
  token: Cancellation,
  answer: Thenable<T | undefined>,
  onLate: () => void,
): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve) => {
    let cancelled = false;
    const listener = token.onCancellationRequested(() => {
      cancelled = true;
      resolve(undefined);
    });
    answer.then(
      (value) => {
        listener.dispose();
        if (cancelled) {
          if (value !== undefined) {
            onLate();
          }
          return;
        }
        resolve(value);
      },
      () => {
        listener.dispose();
        resolve(undefined);
      },
    );
  });
}

function lateAnswer(server: protocol.ServerRef, consequence: string): void {
  void vscode.window.showInformationMessage(
    `The question from the MCP server ${serverName(server)} timed out before you answered, so ${consequence}`,
  );
}

function fsPath(uri: string): string {
  return fileUriPath(uri, process.platform === "win32");
}
