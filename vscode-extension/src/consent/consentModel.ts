// What the consent prompts and "MCP: Manage Shared Folders" show and answer, without the vscode API:
// display strings, picker items, answers, the manage-folders plan and the one-prompt-at-a-time queue.
//
// Least privilege throughout: no folder starts checked in a prompt, the default button of every modal shares
// nothing and starts nothing, a folder left unchecked is answered `deny` (remembered, changeable in Manage
// Shared Folders), and every button's meaning is written in the dialog.
import type * as protocol from "../protocol";
import { rootName, serverLabel, stateLabel } from "../status/statusModel";
import { type Confinement, confinementSentence } from "./confinement";
import {
  INVISIBLE_CHARS,
  escapeCodePoint,
  fileUriPath,
  foldersShared,
  noIcons,
  oneLine,
  product,
  visible,
} from "../text";

/** A folder decision the user can give in a prompt (`forget` is never offered there). */
export type FolderDecision = protocol.RootDecision["decision"];

/** How a folder is shared: read and write or read only, remembered or for this session. */
export type AllowKind = "allow" | "allowSession" | "allowReadOnly" | "allowSessionReadOnly";

/** Whether `kind` shares read only. */
export function isReadOnly(kind: AllowKind): boolean {
  return kind === "allowReadOnly" || kind === "allowSessionReadOnly";
}

/** Button titles of the consent modals; one place so the flow and its tests agree. */
export const Choice = {
  trust: "Trust and Start",
  dontTrust: "Don't Trust",
  allow: "Allow",
  allowSession: "Allow for This Session",
  allowReadOnly: "Allow Read Only",
  allowSessionReadOnly: "Allow Read Only for This Session",
  chooseFolders: "Choose Folders…",
  dontShare: "Don't Share",
  shareForSession: "Share for This Session",
  shareReadOnly: "Read Only…",
} as const;

/** The longest folder name a button shows whole. */
const BUTTON_NAME_LENGTH = 32;

/** The button that shares the one folder of a folder modal for good: `Share “ws”`. */
export function shareFolderChoice(name: string): string {
  const shown = visible(name);
  return `Share “${shown.length > BUTTON_NAME_LENGTH ? `${shown.slice(0, BUTTON_NAME_LENGTH - 1)}…` : shown}”`;
}

/** One of {@link Choice}'s titles. */
export type ChoiceTitle = (typeof Choice)[keyof typeof Choice];

const SAFE_ARG = /^[A-Za-z0-9_@%+=:,./-]+$/;
// Characters that can make a command line read differently than it runs.
const INVISIBLE = new RegExp(`[${INVISIBLE_CHARS}]`, "u");

/**
 * Quote one argument the way a POSIX shell would need it, for display: plain words stay as they are,
 * anything else is single-quoted; control, bidi and zero-width characters are shown as `$'\n'`-style escapes
 * so the line on screen is the line that runs.
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
        return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : escapeCodePoint(char);
      }
      return char;
  }
}

/** The command line as written (stdio: command and arguments, quoted) or the URL (http). */
export function commandLine(server: protocol.ServerRef): string {
  if (server.transport === "http") {
    return server.url === undefined ? "(no URL)" : visible(server.url);
  }
  const parts = [server.command ?? "", ...(server.args ?? [])];
  return parts.map(quoteArg).join(" ");
}

/** "Command" or "URL", whichever {@link commandLine} shows. */
export function commandLineLabel(server: protocol.ServerRef): string {
  return server.transport === "http" ? "URL" : "Command";
}

/** The server's name for messages: its label in quotes, with the id when it differs; invisible characters escaped. */
export function serverName(server: Pick<protocol.ServerRef, "id" | "label">): string {
  const id = visible(server.id);
  return server.label === server.id || server.label === "" ? `“${id}”` : `“${visible(server.label)}” (${id})`;
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

/** How a prompt shows local paths: `toPath` turns a `file:` URI into a path, `home` is shortened to `~`. */
export interface PathDisplay {
  toPath: (uri: string) => string;
  home: string;
}

/** A folder URI as a home-relative path with invisible characters escaped. */
export function shownPath(uri: string, display: PathDisplay): string {
  return visible(homeRelative(display.toPath(uri), display.home));
}

/** Where a server is defined, for display: "your settings", or the config file's home-relative path. */
export function sourceText(source: string, display: PathDisplay): string {
  return source === "settings" ? "your settings" : shownPath(source, display);
}

/** `NAME` or `NAME=value` (run-changing variables only), escaped; `value` quoted like an argument. */
function envText(variable: protocol.EnvVar): string {
  const name = visible(variable.name);
  return variable.value === undefined ? name : `${name}=${quoteArg(variable.value)}`;
}

/**
 * Exactly what runs (or is contacted), one fact per line: where it is defined, the resolved executable (or that
 * none was found on the server's PATH), the command as written, the working directory, the environment it sets
 * (names; values only of variables that decide which code runs), its envFile and what that sets, that the folders
 * you share are passed on its command line (`${hostBridge:sharedFolders}`), that its config turns the sandbox off,
 * the user's own environment variables it reads, the URL and the names of the headers sent. Invisible characters
 * are escaped.
 */
export function launchLines(server: protocol.ServerRef, display: PathDisplay): string[] {
  const lines = [`Defined in: ${sourceText(server.source, display)}`];
  if (server.transport === "http") {
    lines.push(`URL: ${commandLine(server)}`);
    if (server.headerNames.length > 0) {
      lines.push(`Headers sent: ${server.headerNames.map(visible).join(", ")} (values not shown)`);
    }
  } else {
    const command = visible(server.command ?? "");
    lines.push(
      server.executable === undefined
        ? `Executable: not found on the server's PATH (it would run “${command}”)`
        : `Executable: ${visible(server.executable)}`,
      `Command: ${commandLine(server)}`,
    );
    if (server.cwd !== undefined && server.cwd !== "") {
      lines.push(`Working directory: ${visible(server.cwd)}`);
    }
    const own = server.env.filter((variable) => !variable.fromEnvFile);
    const fromFile = server.env.filter((variable) => variable.fromEnvFile);
    if (own.length > 0) {
      lines.push(`Environment it sets: ${own.map(envText).join(", ")}`);
    }
    if (server.envFile !== undefined && server.envFile !== "") {
      const sets = fromFile.length > 0 ? `, which sets ${fromFile.map(envText).join(", ")}` : "";
      lines.push(`Environment file: ${visible(server.envFile)}${sets}`);
    } else if (fromFile.length > 0) {
      lines.push(`From its environment file: ${fromFile.map(envText).join(", ")}`);
    }
    if (server.env.some((variable) => variable.value === undefined)) {
      lines.push("(Values are shown only for variables that decide which code runs, such as PATH.)");
    }
    if (server.passesSharedFolders) {
      lines.push("Folders you share are passed on its command line (it restarts when they change)");
    }
    if (server.sandboxSetting === "off") {
      lines.push("Sandbox: off in its config (it can read and write whatever you can)");
    }
  }
  if (server.envReferences.length > 0) {
    lines.push(
      `Reads your environment variables: ${server.envReferences.map(visible).join(", ")} (their values are sent to the server)`,
    );
  }
  return lines;
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
      return manifests.length > 0 ? `project (${manifests.map(visible).join(", ")})` : "project";
    })
    .join(" · ");
}

/** A folder's display name: its candidate name, else the last segment of its path; escaped. */
export function folderName(uri: string, names: ReadonlyMap<string, string> = new Map()): string {
  return visible(names.get(uri) ?? rootName({ uri }));
}

/** The text that says a folder is seen through a shared one: `visible through “acme”`. */
export function visibleThroughText(through: string, names: ReadonlyMap<string, string> = new Map()): string {
  return `visible through “${folderName(through, names)}”`;
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
 * A candidate as a QuickPick item: name, home-relative path, kinds, and "visible through “parent”" when it is
 * seen through a shared folder. Checked only when `picked` says so: a prompt never pre-checks anything.
 */
export function folderItem(
  candidate: protocol.Candidate,
  display: PathDisplay,
  picked = false,
  through?: { uri: string; name: string },
): FolderItemFields {
  const kinds = kindsText(candidate);
  const seen = through === undefined ? [] : [`visible through “${visible(through.name)}”`];
  return {
    uri: candidate.uri,
    label: noIcons(visible(candidate.name)),
    description: noIcons(shownPath(candidate.uri, display)),
    detail: noIcons([...(kinds === "" ? [] : [kinds]), ...seen].join(" · ")),
    picked,
  };
}

/**
 * Buttons of the folder modal, the first being the default (Enter), which shares nothing: for several folders
 * "Choose Folders…" (it only opens the list) and "Don't Share"; for one folder the answers themselves, "Don't
 * Share" first, then `Share “ws”` and "Share for This Session", so that one folder takes one step, and "Read
 * Only…", which opens the step that shares it read only.
 */
export function folderChoices(roots: readonly Pick<protocol.Candidate, "name">[]): string[] {
  const only = roots.length === 1 ? roots[0] : undefined;
  if (only !== undefined) {
    return [Choice.dontShare, shareFolderChoice(only.name), Choice.shareForSession, Choice.shareReadOnly];
  }
  return [Choice.chooseFolders, Choice.dontShare];
}

/**
 * What a folder modal's button means: the answers to send, `choose` (open the list), `kind` (ask how the one folder
 * is shared: read only or not, for how long) or `undefined` (Cancel).
 */
export function folderChoiceAnswer(
  choice: string | undefined,
  roots: readonly protocol.Candidate[],
): protocol.RootDecision[] | "choose" | "kind" | undefined {
  const only = roots.length === 1 ? roots[0] : undefined;
  if (choice === Choice.dontShare) {
    return denyAll(roots);
  }
  if (only !== undefined && choice === shareFolderChoice(only.name)) {
    return [{ uri: only.uri, decision: "allow" }];
  }
  if (only !== undefined && choice === Choice.shareForSession) {
    return [{ uri: only.uri, decision: "allowSession" }];
  }
  if (only !== undefined && choice === Choice.shareReadOnly) {
    return "kind";
  }
  return only === undefined && choice === Choice.chooseFolders ? "choose" : undefined;
}

/** Buttons of the trust modal, the first being the default (Enter): it does not start the server. */
export function trustChoices(): ChoiceTitle[] {
  return [Choice.dontTrust, Choice.trust];
}

/**
 * The answer to a folder prompt: each checked folder with `kind`, each asked folder left unchecked `deny`
 * (remembered as not shared, so it is not asked again and shows as not shared in Manage Shared Folders). URIs
 * that were not asked about are never included, whatever the selection holds. In the order asked.
 */
export function folderAnswers(
  asked: readonly Pick<protocol.Candidate, "uri">[],
  checked: Iterable<string>,
  kind: AllowKind,
): protocol.RootDecision[] {
  const chosen = new Set(checked);
  return asked.map((root) => ({ uri: root.uri, decision: chosen.has(root.uri) ? kind : "deny" }));
}

/** "Don't Share": every asked folder denied. */
export function denyAll(asked: readonly Pick<protocol.Candidate, "uri">[]): protocol.RootDecision[] {
  return folderAnswers(asked, [], "allow");
}

/**
 * The message of the folder modal; a `reason` (why the question comes now, e.g. the sandbox refused the server a
 * path in one of these folders) comes first.
 */
export function folderQuestion(
  server: protocol.ServerRef,
  roots: readonly protocol.Candidate[],
  reason?: string,
): string {
  const why = reason === undefined || oneLine(reason) === "" ? "" : `${visible(oneLine(reason))} `;
  const first = roots[0];
  const question =
    roots.length === 1 && first !== undefined
      ? `share the folder “${visible(first.name)}” with the MCP server ${serverName(server)}?`
      : `share folders with the MCP server ${serverName(server)}? ${roots.length} folders can be shared.`;
  return product(why === "" ? question : `${why}${question.charAt(0).toUpperCase()}${question.slice(1)}`);
}

/** How many folders a modal lists before "… and N more". */
const LISTED = 8;

function listed(lines: readonly string[]): string[] {
  const shown = lines.slice(0, LISTED);
  const more = lines.length - shown.length;
  return [...shown, ...(more > 0 ? [`  … and ${more} more`] : [])];
}

/**
 * The detail of the folder modal: the folders asked about, the folders it already sees through a shared one,
 * what runs, and what each button means.
 */
export function folderDetail(
  server: protocol.ServerRef,
  roots: readonly protocol.Candidate[],
  visibleThrough: readonly protocol.VisibleThrough[],
  display: PathDisplay,
  names: ReadonlyMap<string, string> = new Map(),
  confinement?: Confinement,
): string {
  const only = roots.length === 1 ? roots[0] : undefined;
  const lines = [
    roots.length === 1 ? "The folder:" : "The folders:",
    ...listed(roots.map((root) => `  ${shownPath(root.uri, display)}`)),
  ];
  if (visibleThrough.length > 0) {
    lines.push(
      "Already visible to it, inside a folder shared with it (nothing to decide):",
      ...listed(
        visibleThrough.map((item) => `  ${shownPath(item.uri, display)} — ${visibleThroughText(item.through, names)}`),
      ),
    );
  }
  lines.push(
    "",
    ...launchLines(server, display),
    "",
    confinementSentence(server, confinement, "the folders you share with it"),
    "A shared folder is offered to the server as an MCP root, a place it may read and change files in.",
    "",
    ...(only === undefined
      ? [
          `${Choice.chooseFolders}: check the folders to share; none is checked to begin with. Folders you leave unchecked are remembered as not shared with this server.`,
          `${Choice.dontShare}: share none of them with this server, and don't ask again.`,
        ]
      : [
          `${Choice.dontShare}: don't share it with this server, and don't ask again.`,
          `${shareFolderChoice(only.name)}: share it with this server until you change that.`,
          `${Choice.shareForSession}: share it until the host bridge or VS Code restarts.`,
          `${Choice.shareReadOnly}: share it read only (the sandbox refuses every write there), remembered or for this session.`,
        ]),
    "Cancel: decide later; nothing is shared now, and you are asked again when the host bridge next starts.",
    "Change your answer at any time with “MCP: Manage Shared Folders”.",
  );
  return lines.join("\n");
}

/**
 * The placeholder of the folder chooser (step 1 of 2); short enough to show whole in VS Code's quick input (at most
 * 600 pixels wide). The modal before it says that unchecked folders are remembered as not shared.
 */
export function chooserPlaceholder(): string {
  return "Check the folders to share, then press Enter (the rest stay unshared)";
}

/** The placeholder of "MCP: Manage Shared Folders"' folder list; short enough to show whole. */
export function managePlaceholder(): string {
  return "Check the folders this server may see, then press Enter";
}

/** The placeholder of the last step of sharing: read and write or read only, and for how long. */
export function allowKindPlaceholder(count: number, readOnly = false): string {
  const folders = count === 1 ? "the folder" : `the ${count} folders`;
  if (readOnly) {
    return `Share ${folders} read only for how long? Escape shares nothing.`;
  }
  return `Share ${folders} to read and write, or read only, and how long? Escape shares nothing.`;
}

/** A QuickPick title naming the product: "MCP Host Bridge: Share Folders with “fs” (1/2)". */
export function pickerTitle(text: string): string {
  return product(text);
}

/**
 * The trust answer for the trust modal's button: `true` to trust, `false` only for "Don't Trust" (the sidecar
 * remembers it), `undefined` for Cancel or a time-out (the server keeps waiting for trust, nothing recorded).
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

/** The message of the trust modal; with a `batch`, one answer covers every server of the workspace file. */
export function trustQuestion(server: protocol.ServerRef, batch: readonly protocol.ServerRef[] = []): string {
  if (batch.length > 0) {
    return product(`trust and start the ${batch.length + 1} MCP servers defined by this workspace file?`);
  }
  return product(`trust and start the MCP server ${serverName(server)} defined by this workspace?`);
}

/**
 * The detail of the trust modal: where it is defined, exactly what runs, and what each button means. With a
 * `batch` (the other servers of the same workspace file, which the answer also covers), every server is listed.
 */
export function trustDetail(
  server: protocol.ServerRef,
  display: PathDisplay,
  batch: readonly protocol.ServerRef[] = [],
  confinementOf: (id: string) => Confinement | undefined = () => undefined,
): string {
  const servers = [server, ...batch];
  const confined = (each: protocol.ServerRef): string =>
    confinementSentence(each, confinementOf(each.id), "the folders you then choose");
  const described =
    batch.length === 0
      ? [...launchLines(server, display), confined(server)]
      : servers.flatMap((each, index) => [
          `${index + 1}. ${serverName(each)}`,
          ...[...launchLines(each, display), confined(each)].map((line) => `    ${line}`),
        ]);
  const single = batch.length === 0;
  return [
    ...described,
    "",
    single && server.transport === "http"
      ? "It will be contacted from your machine. Trust it only if you know this address."
      : `${single ? "It runs" : "They run"} on your machine. Trust only programs you recognise.`,
    "",
    single
      ? `${Choice.dontTrust}: it is not started, and you are not asked again about this definition (an edited definition asks again).`
      : `${Choice.dontTrust}: none of them is started, and you are not asked again about these definitions (an edited one asks again).`,
    single
      ? `${Choice.trust}: it starts now and whenever this definition is unchanged; then you choose the folders it may see.`
      : `${Choice.trust}: all ${servers.length} start now and whenever their definitions are unchanged; then you choose the folders each may see.`,
    "Cancel: decide later; nothing is started, and you are asked again when the host bridge next starts.",
  ].join("\n");
}

/** A folder for "MCP: Manage Shared Folders": a candidate, or a shared folder that is no candidate any more. */
export function manageableFolders(
  candidates: readonly protocol.Candidate[],
  shared: readonly protocol.SharedRoot[],
): protocol.Candidate[] {
  const known = new Set(candidates.map((candidate) => candidate.uri));
  const extra = shared
    .filter((root) => !known.has(root.uri))
    .map((root): protocol.Candidate => ({ uri: root.uri, name: root.name ?? rootName(root), kinds: [], markers: [] }));
  return [...candidates, ...extra];
}

/** The rows of "MCP: Manage Shared Folders": checked when the server sees the folder (shared, or through a parent). */
export function manageItems(
  folders: readonly protocol.Candidate[],
  server: Pick<protocol.ServerStatus, "sharedRoots" | "visibleThrough">,
  display: PathDisplay,
): FolderItemFields[] {
  const shared = new Set(server.sharedRoots.map((root) => root.uri));
  const through = new Map(server.visibleThrough.map((item) => [item.uri, item.through]));
  const names = folderNames(folders, server.sharedRoots);
  return folders.map((folder) => {
    const parent = through.get(folder.uri);
    const seen =
      parent === undefined ? undefined : { uri: parent, name: names.get(parent) ?? rootName({ uri: parent }) };
    return folderItem(folder, display, shared.has(folder.uri) || parent !== undefined, seen);
  });
}

/** Display names by URI: the shared roots' names, then the candidates' (which win). */
export function folderNames(
  candidates: readonly Pick<protocol.Candidate, "uri" | "name">[],
  shared: readonly protocol.SharedRoot[] = [],
): Map<string, string> {
  const names = new Map<string, string>();
  for (const root of shared) {
    names.set(root.uri, rootName(root));
  }
  for (const candidate of candidates) {
    names.set(candidate.uri, candidate.name);
  }
  return names;
}

/** One `hostBridge/setConsent` call of a manage-folders change (the server id is added by the caller). */
export interface ConsentChange {
  uri: string;
  decision: protocol.SetConsentParams["decision"];
}

/**
 * The `setConsent` calls that make the server see exactly the checked folders. A folder counts as seen when it
 * is shared or visible through a shared parent (`visibleThrough`: folder URI → parent URI).
 * - a newly checked folder is allowed with `allowDecision`; so is a folder seen only through a parent that is
 *   being unchecked, when it stays checked (it would disappear otherwise);
 * - a seen folder that is unchecked is denied (a folder that stays visible through a parent is still denied:
 *   its own answer is remembered, and the caller offers to unshare the parent).
 * Allowances come first (in selection order), then denials, outer folders before the folders inside them, so
 * that a folder's answer is reported against what its parents have become.
 */
export function sharedFoldersDiff(
  shared: Iterable<string>,
  selected: Iterable<string>,
  allowDecision: AllowKind,
  visibleThrough: ReadonlyMap<string, string> = new Map(),
): ConsentChange[] {
  const before = new Set(shared);
  const after = new Set(selected);
  const added = [...after]
    .filter((uri) => {
      if (before.has(uri)) {
        return false;
      }
      const parent = visibleThrough.get(uri);
      return parent === undefined || !after.has(parent);
    })
    .map((uri): ConsentChange => ({ uri, decision: allowDecision }));
  const seen = [...before, ...[...visibleThrough.keys()].filter((uri) => !before.has(uri))];
  const removed = seen
    .filter((uri) => !after.has(uri))
    .sort((a, b) => depth(a) - depth(b))
    .map((uri): ConsentChange => ({ uri, decision: "deny" }));
  return [...added, ...removed];
}

function depth(uri: string): number {
  return fileUriPath(uri)
    .split("/")
    .filter((segment) => segment !== "").length;
}

/** A change as the sidecar applied it. */
export interface AppliedChange extends ConsentChange {
  result: protocol.SetConsentResult;
}

/** Folders denied that stay visible through a shared parent, grouped by that parent (in order of appearance). */
export function stillVisible(applied: readonly AppliedChange[]): { parent: string; folders: string[] }[] {
  const groups = new Map<string, string[]>();
  for (const change of applied) {
    const parent = change.result.visibleThrough;
    if (change.decision === "deny" && parent !== undefined) {
      groups.set(parent, [...(groups.get(parent) ?? []), change.uri]);
    }
  }
  return [...groups.entries()].map(([parent, folders]) => ({ parent, folders }));
}

/** `“a”`, `“a” and “b”`, `“a”, “b” and “c”`. */
export function quotedList(names: readonly string[]): string {
  const quoted = names.map((name) => `“${name}”`);
  if (quoted.length <= 1) {
    return quoted.join("");
  }
  return `${quoted.slice(0, -1).join(", ")} and ${quoted.at(-1) ?? ""}`;
}

/** The modal offering to unshare a parent through which unchecked folders stay visible. */
export function unshareParentPrompt(
  server: Pick<protocol.ServerRef, "id" | "label">,
  parent: string,
  folders: readonly string[],
  display: PathDisplay,
  names: ReadonlyMap<string, string> = new Map(),
): { message: string; detail: string; stop: string; keep: string } {
  const parentName = folderName(parent, names);
  const children = quotedList(folders.map((uri) => folderName(uri, names)));
  const verb = folders.length === 1 ? "stays" : "stay";
  const stop = `Stop Sharing “${parentName}”`;
  const keep = `Keep Sharing “${parentName}”`;
  return {
    message: product(
      `${children} ${verb} visible to the MCP server ${serverName(server)} through “${parentName}”. Stop sharing “${parentName}”?`,
    ),
    detail: [
      `“${parentName}” (${shownPath(parent, display)}) is shared with ${serverName(server)}, and ${children} ${folders.length === 1 ? "is" : "are"} inside it, so the server still sees ${folders.length === 1 ? "it" : "them"}.`,
      "",
      `${stop}: the server sees neither any more. You can still share folders inside it on their own with “MCP: Manage Shared Folders”.`,
      `${keep}: nothing else changes; ${children} ${verb} visible through “${parentName}”.`,
    ].join("\n"),
    stop,
    keep,
  };
}

/** A short sentence about applied manage-folders changes, from what the sidecar says now holds. */
export function changeSummary(
  server: Pick<protocol.ServerRef, "id" | "label">,
  applied: readonly AppliedChange[],
  names: ReadonlyMap<string, string> = new Map(),
): string {
  if (applied.length === 0) {
    return product(`nothing changed for the MCP server ${serverName(server)}.`);
  }
  const named = (keep: (change: AppliedChange) => boolean): string[] =>
    applied.filter(keep).map((change) => `“${folderName(change.uri, names)}”`);
  const allowed = named((change) => change.result.applied === "allow");
  const session = named((change) => change.result.applied === "allowSession");
  const readOnly = named((change) => change.result.applied === "allowReadOnly");
  const readOnlySession = named((change) => change.result.applied === "allowSessionReadOnly");
  const denied = named((change) => change.result.applied === "deny" && change.result.visibleThrough === undefined);
  const visibleStill = applied.filter(
    (change) => change.result.applied === "deny" && change.result.visibleThrough !== undefined,
  );
  const parts = [
    ...(allowed.length > 0 ? [`now sharing ${allowed.join(", ")}`] : []),
    ...(session.length > 0 ? [`sharing ${session.join(", ")} for this session`] : []),
    ...(readOnly.length > 0 ? [`now sharing ${readOnly.join(", ")} read only`] : []),
    ...(readOnlySession.length > 0 ? [`sharing ${readOnlySession.join(", ")} read only for this session`] : []),
    ...(denied.length > 0 ? [`no longer sharing ${denied.join(", ")}`] : []),
    ...visibleStill.map(
      (change) =>
        `“${folderName(change.uri, names)}” is not shared on its own but stays ${visibleThroughText(change.result.visibleThrough ?? "", names)}`,
    ),
  ];
  return product(`MCP server ${serverName(server)}: ${parts.join("; ")}.`);
}

/** The server a command argument names (the status picker passes a server id), if it is one of `servers`. */
export function serverNamed<T extends { id: string }>(servers: readonly T[], serverId: unknown): T | undefined {
  return typeof serverId === "string" ? servers.find((server) => server.id === serverId) : undefined;
}

/** The fields of a server's QuickPick item in "MCP: Manage Shared Folders". */
export function serverItem(status: protocol.ServerStatus): { id: string; label: string; description: string } {
  const through = status.visibleThrough.length;
  return {
    id: status.id,
    label: noIcons(visible(serverLabel(status))),
    description: [
      stateLabel(status.state),
      foldersShared(status.sharedRoots.length),
      ...(through > 0 ? [`${through} more visible through ${through === 1 ? "it" : "them"}`] : []),
    ].join(" · "),
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
