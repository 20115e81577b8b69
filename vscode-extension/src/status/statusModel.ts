// What the status bar item and the "MCP: Show Server Status" pickers show, computed from the sidecar's
// state and the servers' statuses. No `vscode` here: status.ts turns these views into UI objects.
import type { SidecarState } from "../ctx";
import type { ServerState, ServerStatus, SharedRoot } from "../protocol";
import { PRODUCT, escapeMarkdown, fileUriPath, foldersShared, noIcons, oneLine, product, visible } from "../text";
import { type WaitingForTrust, waitingSentence, withServers } from "../consent/workspaceTrustModel";

/** The status bar item's content; `tooltip` is Markdown. */
export interface StatusBarView {
  text: string;
  tooltip: string;
  /** Show the warning background: a server failed, or the sidecar itself is not running. */
  warning: boolean;
}

/** Texts of one QuickPick entry. */
export interface PickTexts {
  label: string;
  description?: string;
  detail?: string;
}

/**
 * What a server's action entry does when picked: `folders` (what its folders are to it; opens Manage Shared
 * Folders) and `sandbox` (its sandbox; shows the whole sentence) describe the server first.
 */
export type ServerActionId =
  "folders" | "sandbox" | "restartServer" | "showLog" | "manageFolders" | "restartSidecar" | "handOver" | "giveBack";

/** How a server stands with the copy VS Code's own MCP support runs of it (vscodeMcp/vsCodeCopies.ts). */
export type CopyState = "handedOver" | "vsCodeRunsItsOwn" | "vsCodeCopyCannotStart";

/** A server's copy state in words, for the status. */
export function copyText(state: CopyState): string {
  switch (state) {
    case "handedOver":
      return "handed over: VS Code's own copy is stopped";
    case "vsCodeRunsItsOwn":
      return "VS Code also runs its own copy, outside per-folder consent";
    case "vsCodeCopyCannotStart":
      return "VS Code's own copy cannot start: VS Code does not fill in ${hostBridge:sharedFolders}; hand it over";
  }
}

/** One entry of a server's action picker. */
export interface ServerAction extends PickTexts {
  id: ServerActionId;
}

const STATE_LABELS: Record<ServerState, string> = {
  awaitingTrust: "awaiting trust",
  awaitingFolders: "waiting for you to share a folder",
  starting: "starting",
  running: "running",
  restarting: "restarting",
  stopped: "stopped",
  failed: "failed",
};

/** A server state in words ("awaiting trust"). */
export function stateLabel(state: ServerState): string {
  return STATE_LABELS[state];
}

/** A shared folder's display name: its advertised name, else the last segment of its path. */
export function rootName(root: SharedRoot): string {
  if (root.name !== undefined && root.name !== "") {
    return root.name;
  }
  const path = fileUriPath(root.uri);
  const segments = path.split("/").filter((segment) => segment !== "");
  return segments.at(-1) ?? path;
}

/**
 * The folders a server sees only through a shared folder containing them, in words:
 * `ui visible through acme, api visible through acme`; empty when there are none.
 */
export function visibleThroughText(server: Pick<ServerStatus, "sharedRoots" | "visibleThrough">): string {
  const names = new Map(server.sharedRoots.map((root) => [root.uri, rootName(root)]));
  return server.visibleThrough
    .map(
      (item) =>
        `${visible(rootName({ uri: item.uri }))} visible through ${visible(names.get(item.through) ?? rootName({ uri: item.through }))}`,
    )
    .join(", ");
}

/** How many distinct folders are shared with at least one server. */
export function sharedFolderCount(servers: readonly ServerStatus[]): number {
  return new Set(servers.flatMap((server) => server.sharedRoots.map((root) => root.uri))).size;
}

/** `10:42:07` for a time today, `2026-05-01 10:42` for another day (local time); the text itself if no time. */
export function timeText(iso: string, now: Date = new Date()): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) {
    return visible(iso);
  }
  const two = (n: number): string => String(n).padStart(2, "0");
  const day = (d: Date): string => `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  const clock = `${two(time.getHours())}:${two(time.getMinutes())}`;
  return day(time) === day(now) ? `${clock}:${two(time.getSeconds())}` : `${day(time)} ${clock}`;
}

/**
 * What the folders shared with a server are to it now, never claiming it got folders it did not: `shares` only
 * when they reached it (it asked for its roots, or they are on its command line), else `offered`; then whether
 * and when it last asked for them, and the other ways they reach it. E.g. `offered webapp — has not asked for its
 * folders`, `shares webapp — asked for its folders at 10:42:07; its sandbox confines it to them`.
 */
export function foldersText(
  server: Pick<ServerStatus, "sharedRoots" | "rootsAskedAt" | "reach">,
  now: Date = new Date(),
): string {
  if (server.sharedRoots.length === 0) {
    return foldersShared(0);
  }
  const names = server.sharedRoots.map((root) => visible(rootName(root))).join(", ");
  const received = server.reach.includes("roots") || server.reach.includes("launch");
  const facts = [
    server.rootsAskedAt === undefined
      ? "has not asked for its folders"
      : `asked for its folders at ${timeText(server.rootsAskedAt, now)}`,
  ];
  if (server.reach.includes("launch")) {
    facts.push("they are on its command line");
  }
  if (server.reach.includes("sandbox")) {
    facts.push("its sandbox confines it to them");
  }
  return `${received ? "shares" : "offered"} ${names} — ${facts.join("; ")}`;
}

/**
 * A stdio server's OS sandbox in one sentence: `Sandbox: ` and the sidecar's summary when it is enforced, else
 * `not sandboxed` and why; before its first start (`planned`), what that start will get. Undefined for a server
 * without one (http).
 */
export function sandboxText(server: Pick<ServerStatus, "sandbox">): string | undefined {
  const sandbox = server.sandbox;
  if (sandbox === undefined) {
    return undefined;
  }
  if (sandbox.planned) {
    if (sandbox.enforced) {
      return `Sandbox: not started yet; it will run confined: ${visible(oneLine(sandbox.summary))}`;
    }
    return sandbox.setting === "off"
      ? "not sandboxed (off): it will be able to read and write every file your account can"
      : `not sandboxed: ${visible(oneLine(sandbox.summary))}`;
  }
  if (sandbox.enforced) {
    const warnings = sandbox.warnings.map((warning) => ` Note: ${visible(oneLine(warning))}`).join("");
    const failure = sandbox.startFailure === undefined ? "" : ` ${visible(oneLine(sandbox.startFailure.sentence))}`;
    return `Sandbox: ${visible(oneLine(sandbox.summary))}${warnings}${failure}`;
  }
  return `not sandboxed: ${visible(oneLine(sandbox.summary))}`;
}

/**
 * `sandboxed` or `not sandboxed` for a stdio server (`to be sandboxed` before its first start); undefined without a
 * sandbox state (http).
 */
export function sandboxWord(server: Pick<ServerStatus, "sandbox">): string | undefined {
  if (server.sandbox === undefined) {
    return undefined;
  }
  if (server.sandbox.planned && server.sandbox.enforced) {
    return "to be sandboxed";
  }
  return server.sandbox.enforced ? "sandboxed" : "not sandboxed";
}

/**
 * The command of a server that fetches its package before it runs it (`npx`, `uvx`, `npm exec`, `pnpm dlx`,
 * `pipx run`, `uv tool run`, `bunx`, `docker run` …), in words for "… may be downloading it"; undefined otherwise.
 */
export function packageRunner(server: Pick<ServerStatus, "transport" | "command" | "args">): string | undefined {
  if (server.transport !== "stdio" || server.command === undefined) {
    return undefined;
  }
  const name = (server.command.split(/[\\/]/).pop() ?? "").replace(/\.(cmd|exe|bat|ps1)$/i, "").toLowerCase();
  const [first, second] = server.args ?? [];
  if (["npx", "uvx", "bunx", "pnpx"].includes(name)) {
    return name;
  }
  if (name === "npm" && (first === "exec" || first === "x")) {
    return "npm exec";
  }
  if ((name === "pnpm" || name === "yarn") && first === "dlx") {
    return `${name} dlx`;
  }
  if (name === "pipx" && first === "run") {
    return "pipx run";
  }
  if (name === "uv" && first === "tool" && second === "run") {
    return "uv tool run";
  }
  if ((name === "docker" || name === "podman") && first === "run") {
    return `${name} run`;
  }
  return undefined;
}

/**
 * What a starting server may be waiting for, for the status: `npx may be downloading its package` for a package
 * runner's first start, else `its process is starting`; undefined unless it is starting or restarting.
 */
export function startingNote(
  server: Pick<ServerStatus, "state" | "transport" | "command" | "args">,
): string | undefined {
  if (server.state !== "starting" && server.state !== "restarting") {
    return undefined;
  }
  if (server.transport === "http") {
    return "connecting to its URL";
  }
  const runner = packageRunner(server);
  if (runner === undefined || server.state === "restarting") {
    return "its process is starting";
  }
  return runner.startsWith("docker") || runner.startsWith("podman")
    ? `${runner} may be pulling its image`
    : `${runner} may be downloading its package`;
}

/** `fs`, `fs and web`, `fs, web and 2 more`: the servers named in a short line. */
function namedFew(servers: readonly ServerStatus[]): string {
  const names = servers.map((server) => visible(serverLabel(server)));
  if (names.length <= 2) {
    return names.join(" and ");
  }
  return `${names.slice(0, 2).join(", ")} and ${names.length - 2} more`;
}

/**
 * The status bar item for a sidecar state and the servers' latest statuses; `waiting` are the workspace's server
 * files waiting for workspace trust (Restricted Mode). `loaded`: the sidecar has read its server configs (before
 * that, no server listed means "not loaded yet", never "no servers"). A server starting shows as progress.
 */
export function statusBarView(
  sidecar: SidecarState,
  servers: readonly ServerStatus[],
  pid?: number,
  waiting: WaitingForTrust = [],
  loaded = true,
  copies: (id: string) => CopyState | undefined = () => undefined,
): StatusBarView {
  const tooltip = statusTooltip(sidecar, servers, pid, new Date(), waiting, loaded, copies);
  switch (sidecar.kind) {
    case "starting":
      return { text: "$(sync~spin) MCP starting…", tooltip, warning: false };
    case "stopped":
      return { text: "$(debug-disconnect) MCP stopped", tooltip, warning: true };
    case "failed":
      return { text: "$(error) MCP failed", tooltip, warning: true };
    case "running":
      break;
  }
  const warning = servers.some((server) => server.state === "failed");
  if (servers.length === 0) {
    const text = !loaded
      ? "$(sync~spin) MCP starting…"
      : withServers(waiting).length > 0
        ? "$(workspace-untrusted) MCP · waiting for workspace trust"
        : "$(plug) MCP · no servers";
    return { text, tooltip, warning };
  }
  const running = servers.filter((server) => server.state === "running").length;
  const count = running === servers.length ? `${running}` : `${running}/${servers.length}`;
  const starting = servers.filter((server) => startingNote(server) !== undefined);
  if (starting.length > 0) {
    return { text: `$(sync~spin) MCP ${count} · starting ${noIcons(namedFew(starting))}…`, tooltip, warning };
  }
  return { text: `$(plug) MCP ${count} · ${foldersShared(sharedFolderCount(servers))}`, tooltip, warning };
}

/**
 * The status bar tooltip (Markdown): the sidecar's state, then each server with its state and shared folders, then
 * the servers of the workspace's files that wait for workspace trust (Restricted Mode).
 */
export function statusTooltip(
  sidecar: SidecarState,
  servers: readonly ServerStatus[],
  pid?: number,
  now: Date = new Date(),
  waiting: WaitingForTrust = [],
  loaded = true,
  copies: (id: string) => CopyState | undefined = () => undefined,
): string {
  const lines = [`**${PRODUCT}** — ${sidecarSentence(sidecar, pid)}`, ""];
  const untrusted = waitingSentence(waiting, true);
  if (servers.length === 0) {
    lines.push(
      sidecar.kind !== "running"
        ? "No MCP servers known yet."
        : !loaded
          ? "Reading the MCP server configurations…"
          : untrusted !== ""
            ? "No MCP server runs: none is configured in your settings, and this workspace is in Restricted Mode."
            : "No MCP servers are configured. Add them in the `hostBridge.servers` setting or in `.vscode/mcp.json`.",
    );
  }
  for (const server of servers) {
    const starting = startingNote(server);
    let line = `- **${escapeMarkdown(visible(serverLabel(server)))}** — ${stateLabel(server.state)}`;
    if (starting !== undefined) {
      line += ` (${escapeMarkdown(starting)})`;
    }
    if (server.sharedRoots.length > 0) {
      line += `; ${escapeMarkdown(foldersText(server, now))}`;
      const through = visibleThroughText(server);
      if (through !== "") {
        line += `; ${escapeMarkdown(through)}`;
      }
    } else if (server.state === "running") {
      line += "; no folders shared";
    }
    const sandbox = sandboxText(server);
    if (sandbox !== undefined) {
      line += `  \n  ${escapeMarkdown(sandbox)}`;
    }
    const copy = copies(server.id);
    if (copy !== undefined) {
      line += `  \n  ${escapeMarkdown(copyText(copy))}`;
    }
    if (server.lastError !== undefined && server.state !== "running") {
      line += `  \n  ${escapeMarkdown(oneLine(server.lastError))}`;
    }
    lines.push(line);
  }
  if (untrusted !== "") {
    lines.push("", untrusted);
  }
  lines.push("", "Click for details and actions.");
  return lines.join("\n");
}

function sidecarSentence(sidecar: SidecarState, pid: number | undefined): string {
  switch (sidecar.kind) {
    case "starting":
      return sidecar.detail === undefined ? "starting…" : `starting: ${escapeMarkdown(oneLine(sidecar.detail))}`;
    case "running":
      return pid === undefined ? "running" : `running (pid ${pid})`;
    case "stopped":
      return sidecar.reason === undefined ? "stopped" : `stopped: ${escapeMarkdown(oneLine(sidecar.reason))}`;
    case "failed":
      return `failed: ${escapeMarkdown(oneLine(sidecar.reason))}`;
  }
}

/** The first entry of the status picker when the sidecar is not running; undefined while it runs. */
export function sidecarPickTexts(sidecar: SidecarState): PickTexts | undefined {
  switch (sidecar.kind) {
    case "running":
      return undefined;
    case "starting":
      return {
        label: "$(sync~spin) The host bridge is starting",
        description: sidecar.detail === undefined ? undefined : noIcons(oneLine(sidecar.detail)),
        detail: "Pick to restart it if it does not come up.",
      };
    case "stopped":
      return {
        label: "$(debug-disconnect) The host bridge is stopped",
        description: sidecar.reason === undefined ? undefined : noIcons(oneLine(sidecar.reason)),
        detail: "Pick to restart it.",
      };
    case "failed":
      return {
        label: "$(error) The host bridge failed",
        description: noIcons(oneLine(sidecar.reason)),
        detail: "Fix the cause (see the log), then pick to restart it.",
      };
  }
}

/**
 * Why a server offers no resources now, as the status picker and the resource picker say it; `undefined` for a
 * running server that declares the resources capability. Its last error, when it has one, is told apart.
 */
export function resourcesNote(server: Pick<ServerStatus, "state" | "resources">): string | undefined {
  switch (server.state) {
    case "running":
      return server.resources === undefined
        ? "offers no resources: it does not declare the resources capability"
        : undefined;
    case "awaitingTrust":
      return "waits for your trust: it is not started, so it offers no resources until you trust it";
    case "awaitingFolders":
      return "waits for you to share a folder: its command line names its folders, so it starts once one is shared";
    case "starting":
      return "is starting: its resources are listed once it runs";
    case "restarting":
      return "is restarting: its resources are listed once it runs again";
    case "failed":
      return "failed, so it offers no resources";
    case "stopped":
      return "is stopped, so it offers no resources";
  }
}

/** A server's label for lists, its id when the label is empty. */
export function serverLabel(server: Pick<ServerStatus, "id" | "label">): string {
  return server.label === "" ? server.id : server.label;
}

/**
 * A server's entry in the status picker (server-controlled text cannot render icons): its state, protocol revision,
 * whether it is sandboxed and "no resources" when it offers none; then its folders as {@link foldersText} says
 * them, why it offers no resources ({@link resourcesNote}) and its last error.
 */
export function serverPickTexts(server: ServerStatus, now: Date = new Date(), copy?: CopyState): PickTexts {
  const sandboxed = sandboxWord(server);
  const description = [
    stateLabel(server.state),
    ...(server.protocolVersion === undefined ? [] : [server.protocolVersion]),
    ...(sandboxed === undefined ? [] : [sandboxed]),
    ...(server.state === "running" && server.resources === undefined ? ["no resources"] : []),
    ...signInWords(server),
    ...(copy === undefined ? [] : [copy === "handedOver" ? "handed over" : "VS Code runs its own copy"]),
  ].join(" · ");
  const through = visibleThroughText(server);
  const starting = startingNote(server);
  const note = starting === undefined ? resourcesNote(server) : `${resourcesNote(server) ?? ""} (${starting})`;
  const folders = `${foldersText(server, now)}${through === "" ? "" : ` · ${through}`}`;
  const facts = note === undefined ? folders : `${folders} — ${note}`;
  const detail = server.lastError === undefined ? facts : `${facts} — last error: ${oneLine(server.lastError)}`;
  return {
    label: noIcons(visible(serverLabel(server))),
    description: noIcons(visible(description)),
    detail: noIcons(visible(detail)),
  };
}

/** What the picker says of a server's sign-in: "signed in", "waiting for your sign-in" or "needs you to sign in". */
export function signInWords(server: Pick<ServerStatus, "signIn">): string[] {
  switch (server.signIn?.state) {
    case "signedIn":
      return ["signed in"];
    case "waiting":
      return ["waiting for your sign-in in the browser"];
    case "required":
      return ["needs you to sign in: pick it, then Restart server"];
    default:
      return [];
  }
}

/**
 * Whether a read of a resource of server `state` should wait (bounded by the caller) rather than fail now:
 * while the sidecar starts, before its first status is known, while the server is unknown, starting or
 * restarting. Not when the sidecar is stopped or failed: the read then fails with the reason.
 */
export function waitsForServer(
  sidecar: SidecarState["kind"],
  statusKnown: boolean,
  state: ServerState | undefined,
): boolean {
  if (sidecar === "stopped" || sidecar === "failed") {
    return false;
  }
  return (
    sidecar === "starting" || !statusKnown || state === undefined || state === "starting" || state === "restarting"
  );
}

/**
 * The entries of one server's picker: what its folders are to it and its sandbox (stdio), then the actions, most
 * specific first.
 */
export function serverActions(
  server: ServerStatus,
  sidecar: SidecarState,
  now: Date = new Date(),
  copy?: CopyState,
): ServerAction[] {
  const through = visibleThroughText(server);
  const actions: ServerAction[] = [
    {
      id: "folders",
      label: `$(folder) ${noIcons(foldersText(server, now))}`,
      detail: through === "" ? undefined : noIcons(through),
    },
  ];
  if (server.sandbox !== undefined) {
    const enforced = server.sandbox.enforced;
    actions.push({
      id: "sandbox",
      label: enforced ? "$(shield) Sandboxed" : "$(warning) Not sandboxed",
      description: "pick to read it whole",
      detail: noIcons(sandboxText(server) ?? ""),
    });
  }
  if (copy === "vsCodeRunsItsOwn" || copy === "vsCodeCopyCannotStart") {
    actions.push({
      id: "handOver",
      label: "$(arrow-swap) Hand over from VS Code",
      description: "stops VS Code's own copies of this workspace's servers",
      detail: copyText(copy),
    });
  } else if (copy === "handedOver") {
    actions.push({
      id: "giveBack",
      label: "$(arrow-swap) Let VS Code run its own copy",
      description: "outside per-folder consent",
      detail: copyText(copy),
    });
  }
  if (sidecar.kind === "running") {
    actions.push({
      id: "restartServer",
      label: "$(debug-restart) Restart server",
      description:
        server.state === "awaitingTrust"
          ? "asks for your trust again"
          : server.signIn?.state === "required"
            ? "asks you to sign in again"
            : undefined,
    });
  }
  actions.push(
    { id: "manageFolders", label: "$(folder-opened) Manage shared folders" },
    { id: "showLog", label: "$(output) Show log" },
    { id: "restartSidecar", label: "$(refresh) Restart host bridge", description: "restarts every server" },
  );
  return actions;
}

/** The modal "MCP Host Bridge: the MCP server “x” runs in its OS sandbox." with the sandbox's whole sentence. */
export function sandboxMessage(server: ServerStatus): { message: string; detail: string } {
  const name = `“${visible(serverLabel(server))}”`;
  const sandbox = server.sandbox;
  if (sandbox === undefined) {
    return {
      message: product(`the MCP server ${name} is not run on this machine by MCP Host Bridge, so it has no sandbox.`),
      detail: "",
    };
  }
  const message = sandbox.enforced
    ? product(`the MCP server ${name} runs in its OS sandbox.`)
    : product(`the MCP server ${name} is not sandboxed.`);
  const why =
    server.sandboxSetting === "off"
      ? ['Its entry says "sandbox": "off".']
      : sandbox.setting === "off"
        ? ["Your setting hostBridge.sandbox is off, and its entry does not say otherwise."]
        : [];
  return { message, detail: [visible(sandbox.summary), ...why].join("\n\n") };
}
