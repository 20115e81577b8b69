// What the status bar item and the "MCP: Show Server Status" pickers show, computed from the sidecar's
// state and the servers' statuses. No `vscode` here: status.ts turns these views into UI objects.
import type { SidecarState } from "./ctx";
import type { ServerState, ServerStatus, SharedRoot } from "./protocol";
import { PRODUCT, escapeMarkdown, fileUriPath, foldersShared, noIcons, oneLine, visible } from "./text";

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

/** What a server's action entry does when picked. */
export type ServerActionId = "restartServer" | "showLog" | "manageFolders" | "restartSidecar";

/** One entry of a server's action picker. */
export interface ServerAction extends PickTexts {
  id: ServerActionId;
}

const STATE_LABELS: Record<ServerState, string> = {
  awaitingTrust: "awaiting trust",
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

/** The status bar item for a sidecar state and the servers' latest statuses. */
export function statusBarView(sidecar: SidecarState, servers: readonly ServerStatus[], pid?: number): StatusBarView {
  const tooltip = statusTooltip(sidecar, servers, pid);
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
    return { text: "$(plug) MCP · no servers", tooltip, warning };
  }
  const running = servers.filter((server) => server.state === "running").length;
  const count = running === servers.length ? `${running}` : `${running}/${servers.length}`;
  return { text: `$(plug) MCP ${count} · ${foldersShared(sharedFolderCount(servers))}`, tooltip, warning };
}

/** The status bar tooltip (Markdown): the sidecar's state, then each server with its state and shared folders. */
export function statusTooltip(sidecar: SidecarState, servers: readonly ServerStatus[], pid?: number): string {
  const lines = [`**${PRODUCT}** — ${sidecarSentence(sidecar, pid)}`, ""];
  if (servers.length === 0) {
    lines.push(
      sidecar.kind === "running"
        ? "No MCP servers are configured. Add them in the `hostBridge.servers` setting or in `.vscode/mcp.json`."
        : "No MCP servers known yet.",
    );
  }
  for (const server of servers) {
    let line = `- **${escapeMarkdown(visible(serverLabel(server)))}** — ${stateLabel(server.state)}`;
    if (server.sharedRoots.length > 0) {
      line += `; shares ${server.sharedRoots.map((root) => escapeMarkdown(visible(rootName(root)))).join(", ")}`;
      const through = visibleThroughText(server);
      if (through !== "") {
        line += `; ${escapeMarkdown(through)}`;
      }
    } else if (server.state === "running") {
      line += "; no folders shared";
    }
    if (server.lastError !== undefined && server.state !== "running") {
      line += `  \n  ${escapeMarkdown(oneLine(server.lastError))}`;
    }
    lines.push(line);
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

/** A server's label for lists, its id when the label is empty. */
export function serverLabel(server: Pick<ServerStatus, "id" | "label">): string {
  return server.label === "" ? server.id : server.label;
}

/** A server's entry in the status picker (server-controlled text cannot render icons). */
export function serverPickTexts(server: ServerStatus): PickTexts {
  const description =
    server.protocolVersion === undefined
      ? stateLabel(server.state)
      : `${stateLabel(server.state)} · ${server.protocolVersion}`;
  const through = visibleThroughText(server);
  const folders =
    server.sharedRoots.length === 0
      ? foldersShared(0)
      : `shares ${server.sharedRoots.map((root) => visible(rootName(root))).join(", ")}${through === "" ? "" : ` · ${through}`}`;
  const detail = server.lastError === undefined ? folders : `${folders} — last error: ${oneLine(server.lastError)}`;
  return {
    label: noIcons(visible(serverLabel(server))),
    description: noIcons(visible(description)),
    detail: noIcons(visible(detail)),
  };
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

/** The actions offered for one server, most specific first. */
export function serverActions(server: ServerStatus, sidecar: SidecarState): ServerAction[] {
  const actions: ServerAction[] = [];
  if (sidecar.kind === "running") {
    actions.push({
      id: "restartServer",
      label: "$(debug-restart) Restart server",
      description: server.state === "awaitingTrust" ? "asks for your trust again" : undefined,
    });
  }
  actions.push(
    { id: "manageFolders", label: "$(folder-opened) Manage shared folders" },
    { id: "showLog", label: "$(output) Show log" },
    { id: "restartSidecar", label: "$(refresh) Restart host bridge", description: "restarts every server" },
  );
  return actions;
}
