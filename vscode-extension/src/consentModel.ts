// What the consent prompts and "MCP: Manage Shared Folders" show and answer, without the vscode API:
// display strings, picker items, answers, the manage-folders diff and the one-prompt-at-a-time queue.
import type * as protocol from "./protocol";
import { serverLabel, stateLabel } from "./statusModel";
import { INVISIBLE_CHARS, foldersShared, noIcons } from "./text";

/** A folder decision the user can give in a prompt (`forget` is never offered there). */
export type FolderDecision = protocol.RootDecision["decision"];

/** Button titles of the consent modals; one place so the flow and its tests agree. */
export const Choice = {
  trust: "Trust and Start",
  dontTrust: "Don't Trust",
  allow: "Allow",
  allowSession: "Allow for This Session",
  chooseFolders: "Choose Folders…",
  deny: "Deny",
  denyAll: "Deny All",
} as const;

/** One of {@link Choice}'s titles. */
export type ChoiceTitle = (typeof Choice)[keyof typeof Choice];

const SAFE_ARG = /^[A-Za-z0-9_@%+=:,./-]+$/;
// Characters that can make a command line read differently than it runs.
const INVISIBLE = new RegExp(`[${INVISIBLE_CHARS}]`, "u");

/**
 * Quote one argument the way a POSIX shell would need it, for display: plain words stay as they are,
 * anything else is single-quoted; control and bidi characters are shown as `$'\n'`-style escapes so the
 * line on screen is the line that runs.
 */
export function quoteArg(arg: string): string {
  if (arg === "") {
    return "''";
  }
  if (SAFE_ARG.test(arg)) {
    return arg;
  }
  if (INVISIBLE.test(arg)) {
    let escaped = "";
    for (const char of arg) {
      escaped += escapeChar(char);
    }
    return `$'${escaped}'`;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

function escapeChar(char: string): string {
  switch (char) {
    case "\n":
      return "\\n";
    case "\t":
      return "\\t";
    case "\r":
      return "\\r";
    case "\\":
      return "\\\\";
    case "'":
      return "\\'";
    default:
      if (INVISIBLE.test(char)) {
        const code = char.codePointAt(0) ?? 0;
        return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
      }
      return char;
  }
}

/** The exact command line (stdio: command and arguments, quoted) or URL (http) a server is started with. */
export function commandLine(server: protocol.ServerRef): string {
  if (server.transport === "http") {
    return server.url ?? "(no URL)";
  }
  const parts = [server.command ?? "", ...(server.args ?? [])];
  return parts.map(quoteArg).join(" ");
}

/** "Command" or "URL", whichever {@link commandLine} shows. */
export function commandLineLabel(server: protocol.ServerRef): string {
  return server.transport === "http" ? "URL" : "Command";
}

/** The server's name for messages: its label in quotes, with the id when it differs. */
export function serverName(server: Pick<protocol.ServerRef, "id" | "label">): string {
  return server.label === server.id || server.label === "" ? `“${server.id}”` : `“${server.label}” (${server.id})`;
}

/** `path` with the home directory shown as `~` (either separator; never a partial directory name). */
export function homeRelative(path: string, home: string): string {
  if (home === "") {
    return path;
  }
  const trimmedHome = home.replace(/[\\/]+$/, "");
  if (trimmedHome === "" || !path.startsWith(trimmedHome)) {
    return path;
  }
  const rest = path.slice(trimmedHome.length);
  if (rest === "") {
    return "~";
  }
  return rest.startsWith("/") || rest.startsWith("\\") ? `~${rest}` : path;
}

const KIND_LABELS: Record<protocol.Candidate["kinds"][number], string> = {
  workspaceFolder: "workspace folder",
  git: "git",
  worktree: "git worktree",
  submodule: "git submodule",
  project: "project",
};

/** Why a folder is proposed, e.g. `workspace folder · git · project (pyproject.toml)`. */
export function kindsText(candidate: Pick<protocol.Candidate, "kinds" | "markers">): string {
  return candidate.kinds
    .map((kind) => {
      if (kind !== "project") {
        return KIND_LABELS[kind];
      }
      // VCS markers (.git …) are already said by the git kinds; the parenthesis names the manifests.
      const manifests = candidate.markers.filter((marker) => !marker.startsWith("."));
      return manifests.length > 0 ? `project (${manifests.join(", ")})` : "project";
    })
    .join(" · ");
}

/** The fields of a folder's QuickPick item. */
export interface FolderItemFields {
  /** The candidate's URI, compared as a string. */
  uri: string;
  label: string;
  description: string;
  detail: string;
  picked: boolean;
}

/**
 * A candidate as a QuickPick item: name, home-relative path, kinds; preselected when `picked` says so
 * (by default: workspace folders).
 */
export function folderItem(
  candidate: protocol.Candidate,
  fsPath: string,
  home: string,
  picked: boolean = candidate.kinds.includes("workspaceFolder"),
): FolderItemFields {
  return {
    uri: candidate.uri,
    label: noIcons(candidate.name),
    description: noIcons(homeRelative(fsPath, home)),
    detail: noIcons(kindsText(candidate)),
    picked,
  };
}

/** Buttons of the folder modal: a quick answer for one folder, a chooser for several. */
export function folderChoices(roots: readonly protocol.Candidate[]): ChoiceTitle[] {
  return roots.length === 1
    ? [Choice.allow, Choice.allowSession, Choice.deny]
    : [Choice.chooseFolders, Choice.denyAll];
}

/** The decision a modal button stands for, for every folder it is about; `undefined` for others. */
export function decisionOfChoice(choice: string | undefined): FolderDecision | undefined {
  switch (choice) {
    case Choice.allow:
      return "allow";
    case Choice.allowSession:
      return "allowSession";
    case Choice.deny:
    case Choice.denyAll:
      return "deny";
    default:
      return undefined;
  }
}

/**
 * One decision per selected URI that was asked about, in the order asked, each once. URIs not asked about
 * are never included, whatever the selection holds; unselected ones are left out (not allowed, not recorded).
 */
export function decisionsFor(
  asked: readonly Pick<protocol.Candidate, "uri">[],
  selected: Iterable<string>,
  decision: FolderDecision,
): protocol.RootDecision[] {
  const chosen = new Set(selected);
  return asked.filter((root) => chosen.has(root.uri)).map((root) => ({ uri: root.uri, decision }));
}

/** The message of the folder modal. */
export function folderQuestion(server: protocol.ServerRef, roots: readonly protocol.Candidate[]): string {
  const first = roots[0];
  if (roots.length === 1 && first !== undefined) {
    return `Share the folder “${first.name}” with the MCP server ${serverName(server)}?`;
  }
  return `Share folders with the MCP server ${serverName(server)}? ${roots.length} folders can be shared.`;
}

/** The detail of the folder modal: the folders (paths already home-relative), the command line, the meaning. */
export function folderDetail(server: protocol.ServerRef, paths: readonly string[]): string {
  const shown = paths.slice(0, 8);
  const more = paths.length - shown.length;
  const lines = [
    ...shown,
    ...(more > 0 ? [`… and ${more} more`] : []),
    "",
    `${commandLineLabel(server)}: ${commandLine(server)}`,
    "",
    "A shared folder is offered to the server as an MCP root, a place it may read and change files in. " +
      "Change this later with “MCP: Manage Shared Folders”.",
  ];
  return lines.join("\n");
}

/**
 * The trust answer for the trust modal's button: `true` to trust, `false` only for "Don't Trust" (the sidecar
 * remembers it), `undefined` for a dismissal or time-out (the server keeps waiting for trust, nothing recorded).
 */
export function trustOfChoice(choice: string | undefined): boolean | undefined {
  switch (choice) {
    case Choice.trust:
      return true;
    case Choice.dontTrust:
      return false;
    default:
      return undefined;
  }
}

/**
 * Whether the user was actually asked about the folders of a consent answer: not when the trust prompt
 * came first and was not answered with trust (the folder prompt never showed).
 */
export function foldersWereAsked(trustRequired: boolean, result: protocol.AskConsentResult): boolean {
  return !trustRequired || result.trust === true;
}

/** The message of the trust modal. */
export function trustQuestion(server: protocol.ServerRef): string {
  return `Trust and start the MCP server ${serverName(server)} defined by this workspace?`;
}

/** The detail of the trust modal: where it is defined and exactly what runs. */
export function trustDetail(server: protocol.ServerRef, sourcePath: string): string {
  return [
    `Defined in: ${sourcePath}`,
    `${commandLineLabel(server)}: ${commandLine(server)}`,
    "",
    server.transport === "http"
      ? "It will be contacted from your machine. Trust it only if you know this address."
      : "It will run on your machine with your permissions. Trust it only if you recognise this command.",
  ].join("\n");
}

/** Where a server is defined, for display: "your settings", or the config file's home-relative path. */
export function sourceText(source: string, toPath: (uri: string) => string, home: string): string {
  return source === "settings" ? "your settings" : homeRelative(toPath(source), home);
}

/** A folder for "MCP: Manage Shared Folders": a candidate, or a shared folder that is no candidate any more. */
export function manageableFolders(
  candidates: readonly protocol.Candidate[],
  shared: readonly protocol.SharedRoot[],
): protocol.Candidate[] {
  const known = new Set(candidates.map((candidate) => candidate.uri));
  const extra = shared
    .filter((root) => !known.has(root.uri))
    .map((root): protocol.Candidate => ({ uri: root.uri, name: root.name ?? root.uri, kinds: [], markers: [] }));
  return [...candidates, ...extra];
}

/** One `hostBridge/setConsent` call of a manage-folders change (the server id is added by the caller). */
export interface ConsentChange {
  uri: string;
  decision: protocol.SetConsentParams["decision"];
}

/**
 * The `setConsent` calls that turn the shared set into the selection: `allowDecision` for each newly selected
 * folder (in selection order), `deny` for each shared folder no longer selected (in shared order).
 */
export function sharedFoldersDiff(
  shared: Iterable<string>,
  selected: Iterable<string>,
  allowDecision: "allow" | "allowSession",
): ConsentChange[] {
  const before = new Set(shared);
  const after = new Set(selected);
  const added = [...after].filter((uri) => !before.has(uri)).map((uri) => ({ uri, decision: allowDecision }));
  const removed = [...before]
    .filter((uri) => !after.has(uri))
    .map((uri): ConsentChange => ({ uri, decision: "deny" }));
  return [...added, ...removed];
}

/** A short sentence about applied manage-folders changes; `nameOf` gives a folder's display name. */
export function changeSummary(
  server: Pick<protocol.ServerRef, "id" | "label">,
  changes: readonly ConsentChange[],
  nameOf: (uri: string) => string,
): string {
  if (changes.length === 0) {
    return `Nothing changed for the MCP server ${serverName(server)}.`;
  }
  const names = (decisions: readonly string[]): string[] =>
    changes.filter((change) => decisions.includes(change.decision)).map((change) => `“${nameOf(change.uri)}”`);
  const allowed = names(["allow"]);
  const session = names(["allowSession"]);
  const denied = names(["deny"]);
  const parts = [
    ...(allowed.length > 0 ? [`now sharing ${allowed.join(", ")}`] : []),
    ...(session.length > 0 ? [`sharing ${session.join(", ")} for this session`] : []),
    ...(denied.length > 0 ? [`no longer sharing ${denied.join(", ")}`] : []),
  ];
  const sentence = parts.join("; ");
  return `MCP server ${serverName(server)}: ${sentence}.`;
}

/** The server a command argument names (the status picker passes a server id), if it is one of `servers`. */
export function serverNamed<T extends { id: string }>(servers: readonly T[], serverId: unknown): T | undefined {
  return typeof serverId === "string" ? servers.find((server) => server.id === serverId) : undefined;
}

/** The fields of a server's QuickPick item in "MCP: Manage Shared Folders". */
export function serverItem(status: protocol.ServerStatus): { id: string; label: string; description: string } {
  return {
    id: status.id,
    label: noIcons(serverLabel(status)),
    description: `${stateLabel(status.state)} · ${foldersShared(status.sharedRoots.length)}`,
  };
}

/**
 * Runs tasks one at a time in the order given, so that prompts never overlap. A task that fails does not
 * hold up the next one; its caller still sees the failure.
 */
export class PromptQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  /** Tasks queued or running. */
  get size(): number {
    return this.waiting;
  }

  /** Run `task` after every task queued before it has settled. */
  run<T>(task: () => Promise<T>): Promise<T> {
    this.waiting += 1;
    const result = this.tail.then(task).finally(() => {
      this.waiting -= 1;
    });
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * Folders the user left unshared in this window, per server launch: after a sidecar restart (a crash, a
 * settings change) they are not asked about again until the window reloads. Only ever narrows a prompt.
 */
export class LeftPrivate {
  private readonly keys = new Set<string>();

  private static key(server: protocol.ServerRef, uri: string): string {
    return JSON.stringify([server.id, server.transport, server.command ?? null, server.args ?? [], server.url ?? null, uri]);
  }

  /** The roots still worth asking about. */
  unasked(server: protocol.ServerRef, roots: readonly protocol.Candidate[]): protocol.Candidate[] {
    return roots.filter((root) => !this.keys.has(LeftPrivate.key(server, root.uri)));
  }

  /** Remember the asked roots that the answer leaves out (or denies). */
  answered(server: protocol.ServerRef, asked: readonly protocol.Candidate[], decisions: readonly protocol.RootDecision[]): void {
    const allowed = new Set(decisions.filter((d) => d.decision !== "deny").map((d) => d.uri));
    for (const root of asked) {
      if (!allowed.has(root.uri)) {
        this.keys.add(LeftPrivate.key(server, root.uri));
      }
    }
  }
}
