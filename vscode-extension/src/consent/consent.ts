// Consent UI: answers `hostBridge/askConsent` (trust, then folders) one prompt at a time, never while one of the
// extension's pickers is open, and the command "MCP: Manage Shared Folders". What is shown and answered comes
// from consentModel; this file only drives the dialogs and pickers.
import * as os from "node:os";
import * as vscode from "vscode";
import type { CommandId } from "../commandIds";
import type { Ctx } from "../ctx";
import {
  type AllowKind,
  type AppliedChange,
  Choice,
  type FolderItemFields,
  type PathDisplay,
  PromptQueue,
  allowKindPlaceholder,
  changeSummary,
  chooserPlaceholder,
  denyAll,
  folderAnswers,
  folderChoiceAnswer,
  isReadOnly,
  folderChoices,
  folderDetail,
  folderItem,
  folderNames,
  folderQuestion,
  manageItems,
  managePlaceholder,
  manageableFolders,
  pickerTitle,
  serverItem,
  serverName,
  serverNamed,
  sharedFoldersDiff,
  stillVisible,
  trustChoices,
  trustDetail,
  trustOfChoice,
  trustQuestion,
  unshareParentPrompt,
} from "./consentModel";
import type { Confinement } from "./confinement";
import * as protocol from "../protocol";
import { errorMessage, fileUriPath, product } from "../text";
import { type Cancellation, NEVER_CANCELLED, pickMany, pickOne } from "../ui/quickPick";

type FolderPickItem = vscode.QuickPickItem & { uri: string };

/** Answers `hostBridge/askConsent` (installed as the context's handler) and runs "MCP: Manage Shared Folders". */
export class Consent {
  private readonly queue = new PromptQueue();

  constructor(private readonly ctx: Ctx) {
    ctx.setConsentHandler((params, token) => this.answer(params, token));
  }

  /**
   * "MCP: Manage Shared Folders", while marked as an open picker; `serverId` (from the status picker) skips
   * choosing the server when it names a known one.
   */
  manageSharedFolders(serverId?: unknown): Promise<void> {
    return this.ctx.pickers.during(() => manageSharedFolders(this.ctx, serverId));
  }

  /** One prompt at a time, and never while one of the extension's pickers is open (it would close it). */
  private answer(params: protocol.AskConsentParams, token: Cancellation): Promise<protocol.AskConsentResult> {
    return this.queue.run(async () => {
      if (this.ctx.pickers.busy) {
        this.ctx.log.info(
          `consent: the question of the MCP server “${params.server.id}” waits until the open picker closes`,
        );
        const timedOut = cancelled(token);
        while (this.ctx.pickers.busy && !token.isCancellationRequested) {
          await Promise.race([this.ctx.pickers.whenClosed(), timedOut]);
        }
      }
      const what = `${params.trustRequired ? "trust and " : ""}${params.roots.length} folder(s)`;
      const why = params.reason === undefined ? "" : ` (${params.reason})`;
      this.ctx.log.info(`consent: asking about ${what} for the MCP server “${params.server.id}”${why}`);
      try {
        return await this.ctx.prompts.during(() => askConsent(params, token, (id) => this.ctx.servers.get(id)));
      } catch (error) {
        // Answered with the error: the sidecar shares nothing and tells the user the `host-bridge consent …`
        // command that decides from a terminal (a notification), as for any editor that cannot ask.
        this.ctx.log.error(
          `consent: the prompt for the MCP server “${params.server.id}” failed; nothing is shared: ${errorMessage(error)}`,
        );
        throw error;
      }
    });
  }
}

function pathDisplay(): PathDisplay {
  return { toPath: fsPath, home: os.homedir() };
}

/**
 * Ask about trust and folders. `confinementOf` gives what the sidecar last said of a server's sandbox, so that the
 * dialogs say what will confine it.
 */
async function askConsent(
  params: protocol.AskConsentParams,
  token: Cancellation,
  confinementOf: (id: string) => Confinement | undefined,
): Promise<protocol.AskConsentResult> {
  const { server, roots } = params;
  if (token.isCancellationRequested) {
    // No `trust` at all: the sidecar records nothing and the server keeps waiting for trust.
    return { decisions: [] };
  }
  const display = pathDisplay();
  let trust: boolean | undefined;
  if (params.trustRequired) {
    const choice = await untilCancelled(
      token,
      vscode.window.showWarningMessage(
        trustQuestion(server, params.batch),
        { modal: true, detail: trustDetail(server, display, params.batch, confinementOf) },
        ...trustChoices(),
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

  const detail = folderDetail(
    server,
    roots,
    params.visibleThrough ?? [],
    display,
    folderNames(roots),
    confinementOf(server.id),
  );
  const choice = await untilCancelled(
    token,
    vscode.window.showInformationMessage(
      folderQuestion(server, roots, params.reason),
      { modal: true, detail },
      ...folderChoices(roots),
    ),
    () => lateAnswer(server, "nothing was shared. Run “MCP: Manage Shared Folders” to share folders."),
  );
  const answered = folderChoiceAnswer(choice, roots);
  if (answered === undefined) {
    // Cancel (or Escape): nothing is decided; the sidecar asks again when it next starts.
    return answer([]);
  }
  const title = `Share Folders with ${serverName(server)}`;
  if (answered === "kind") {
    const kind = await pickAllowKind(pickerTitle(`${title} Read Only`), roots.length, token, true);
    return answer(
      kind === undefined
        ? []
        : folderAnswers(
            roots,
            roots.map((root) => root.uri),
            kind,
          ),
    );
  }
  if (answered !== "choose") {
    return answer(answered);
  }

  const checked = await pickFolders(
    roots.map((root) => folderItem(root, display)),
    pickerTitle(`${title} (1/2)`),
    chooserPlaceholder(),
    token,
  );
  if (checked === undefined) {
    return answer([]);
  }
  if (checked.length === 0) {
    return answer(denyAll(roots));
  }
  const kind = await pickAllowKind(pickerTitle(`${title} (2/2)`), checked.length, token);
  return answer(kind === undefined ? [] : folderAnswers(roots, checked, kind));
}

/**
 * "MCP: Manage Shared Folders": check and uncheck the folders one server sees; `serverId` (from the status picker)
 * skips choosing the server when it names a known one.
 */
async function manageSharedFolders(ctx: Ctx, serverId?: unknown): Promise<void> {
  let server: protocol.ServerStatus | undefined;
  try {
    const status = await ctx.status();
    if (status.servers.length === 0) {
      const add = "Add a Server…";
      void vscode.window
        .showInformationMessage(
          product("no MCP servers are configured. Add one in the setting “hostBridge.servers” or in .vscode/mcp.json."),
          add,
        )
        .then(async (choice) => {
          if (choice === add) {
            await vscode.commands.executeCommand("hostBridge.addServer" satisfies CommandId);
          }
        });
      return;
    }
    server =
      serverNamed(status.servers, serverId) ??
      (status.servers.length === 1 ? status.servers[0] : await pickServer(status.servers));
    if (server === undefined) {
      return;
    }
    if (server.signIn?.state === "signedIn" && (await offerSignOut(ctx, server)) !== "folders") {
      return;
    }
    const display = pathDisplay();
    const folders = manageableFolders(status.candidates, server.sharedRoots);
    if (folders.length === 0) {
      void vscode.window.showInformationMessage(
        product(
          "there is no folder to share: open a folder or a workspace first, then run “MCP: Manage Shared Folders”.",
        ),
      );
      return;
    }
    const names = folderNames(folders, server.sharedRoots);
    const title = pickerTitle(`Folders Shared with ${serverName(server)}`);
    const selected = await pickFolders(
      manageItems(folders, server, display),
      title,
      managePlaceholder(),
      NEVER_CANCELLED,
    );
    if (selected === undefined) {
      return;
    }
    const shared = server.sharedRoots.map((root) => root.uri);
    const through = new Map((server.visibleThrough ?? []).map((item) => [item.uri, item.through]));
    let changes = sharedFoldersDiff(shared, selected, "allow", through);
    if (changes.some((change) => change.decision === "allow")) {
      const added = changes.filter((change) => change.decision === "allow").length;
      const kind = await pickAllowKind(title, added, NEVER_CANCELLED);
      if (kind === undefined) {
        return;
      }
      changes = sharedFoldersDiff(shared, selected, kind, through);
    }
    const applied: AppliedChange[] = [];
    for (const change of changes) {
      const result = await ctx.request(protocol.setConsent, {
        server: server.id,
        uri: change.uri,
        decision: change.decision,
      });
      applied.push({ ...change, result });
    }
    for (const { parent, folders: inside } of stillVisible(applied)) {
      if (await offerToUnshareParent(server, parent, inside, display, names)) {
        const result = await ctx.request(protocol.setConsent, { server: server.id, uri: parent, decision: "deny" });
        applied.push({ uri: parent, decision: "deny", result });
        for (const change of applied) {
          if (inside.includes(change.uri) && change.result.visibleThrough === parent) {
            change.result = { ...change.result, visibleThrough: undefined };
          }
        }
      }
    }
    // A decision that could not be saved was already reported by the sidecar (a warning); the summary says
    // what holds now.
    void vscode.window.showInformationMessage(changeSummary(server, applied, names));
  } catch (error) {
    const whose = server === undefined ? "" : ` with the MCP server ${serverName(server)}`;
    ctx.showError(`Changing the folders shared${whose} failed`, error);
  }
}

/** Ask whether to unshare `parent`, through which the unchecked `folders` stay visible; true to unshare it. */
async function offerToUnshareParent(
  server: protocol.ServerStatus,
  parent: string,
  folders: readonly string[],
  display: PathDisplay,
  names: ReadonlyMap<string, string>,
): Promise<boolean> {
  const prompt = unshareParentPrompt(server, parent, folders, display, names);
  const stop: vscode.MessageItem = { title: prompt.stop };
  const keep: vscode.MessageItem = { title: prompt.keep, isCloseAffordance: true };
  const choice = await vscode.window.showWarningMessage(
    prompt.message,
    { modal: true, detail: prompt.detail },
    stop,
    keep,
  );
  return choice === stop;
}

async function pickServer(servers: readonly protocol.ServerStatus[]): Promise<protocol.ServerStatus | undefined> {
  const items = servers.map((status) => ({ ...serverItem(status), status }));
  const picked = await vscode.window.showQuickPick(items, {
    title: pickerTitle("Manage Shared Folders"),
    placeHolder: "Choose the MCP server whose shared folders to change",
  });
  return picked?.status;
}

/**
 * A multi-select list of folders, checked as the items say. Resolves to the checked URIs on accept,
 * `undefined` on Escape or when `token` is cancelled (the picker is closed then).
 */
/**
 * For a server host_bridge is signed in to: manage its folders, or sign out (forget its tokens; it asks for a
 * sign-in again when it next needs one). `undefined` when the picker was dismissed.
 */
async function offerSignOut(ctx: Ctx, server: protocol.ServerStatus): Promise<"folders" | "signedOut" | undefined> {
  const name = serverName(server);
  const items: (vscode.QuickPickItem & { action: "folders" | "signOut" })[] = [
    { label: `$(folder-opened) Folders shared with ${name}…`, action: "folders" },
    {
      label: `$(sign-out) Sign out of ${name}`,
      description: "forget its sign-in; it asks you to sign in again",
      action: "signOut",
    },
  ];
  const picked = await pickOne(
    vscode.window.createQuickPick<(typeof items)[number]>(),
    { title: pickerTitle(`Manage ${name}`), placeholder: "You are signed in to this MCP server", items },
    NEVER_CANCELLED,
  );
  if (picked === undefined) {
    return undefined;
  }
  if (picked.action === "folders") {
    return "folders";
  }
  const result = await ctx.request(protocol.signOut, { server: server.id });
  void vscode.window.showInformationMessage(
    product(result.signedOut ? `signed out of ${name}.` : `no sign-in was kept for ${name}.`),
  );
  return "signedOut";
}

async function pickFolders(
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
  const checked = await pickMany(
    vscode.window.createQuickPick<FolderPickItem>(),
    {
      title,
      placeholder,
      matchOnDescription: true,
      ignoreFocusOut: true,
      items,
      selectedItems: items.filter((_, index) => fields[index]?.picked === true),
    },
    token,
    () => void vscode.commands.executeCommand("workbench.action.focusQuickOpen").then(undefined, () => undefined),
  );
  return checked?.map((item) => item.uri);
}

/** The last step of sharing: read and write or read only (only read only when `readOnly`), remembered or not. */
async function pickAllowKind(
  title: string,
  count: number,
  token: Cancellation,
  readOnly = false,
): Promise<AllowKind | undefined> {
  const kinds: (vscode.QuickPickItem & { decision: AllowKind })[] = [
    { label: Choice.allow, description: "read and write, remembered until you change it", decision: "allow" },
    {
      label: Choice.allowSession,
      description: "read and write, until the host bridge or VS Code restarts",
      decision: "allowSession",
    },
    {
      label: Choice.allowReadOnly,
      description: "read only (the sandbox refuses every write there), remembered until you change it",
      decision: "allowReadOnly",
    },
    {
      label: Choice.allowSessionReadOnly,
      description: "read only, until the host bridge or VS Code restarts",
      decision: "allowSessionReadOnly",
    },
  ];
  const items = readOnly ? kinds.filter((item) => isReadOnly(item.decision)) : kinds;
  const picked = await pickOne(
    vscode.window.createQuickPick<(typeof items)[number]>(),
    { title, placeholder: allowKindPlaceholder(count, readOnly), ignoreFocusOut: true, items },
    token,
  );
  return picked?.decision;
}

/** Resolves when `token` is cancelled (never, if it is not). */
function cancelled(token: Cancellation): Promise<void> {
  return new Promise<void>((resolve) => {
    if (token.isCancellationRequested) {
      resolve();
      return;
    }
    const listener = token.onCancellationRequested(() => {
      listener.dispose();
      resolve();
    });
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
    let wasCancelled = false;
    const listener = token.onCancellationRequested(() => {
      wasCancelled = true;
      resolve(undefined);
    });
    answer.then(
      (value) => {
        listener.dispose();
        if (wasCancelled) {
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
    product(`the question from the MCP server ${serverName(server)} timed out before you answered, so ${consequence}`),
  );
}

function fsPath(uri: string): string {
  return fileUriPath(uri, process.platform === "win32");
}
