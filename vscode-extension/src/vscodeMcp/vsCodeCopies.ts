// The copies VS Code's own MCP support runs of the servers of a workspace's .vscode/mcp.json and .mcp.json: which
// servers have one, the ids VS Code gives them (so that `workbench.mcp.stopServer` can stop them), which the user
// handed over to MCP Host Bridge, how the notice says it, and which of the extension host's child processes is
// such a copy. No `vscode` here, so the rules are unit-tested; handOver.ts acts on them.
//
// What VS Code 1.139 offers an extension, read in its source (src/vs/workbench/contrib/mcp/): the command
// `workbench.mcp.stopServer <definition id>` stops a running server; a server's enablement per workspace
// ("Disable (Workspace)") can only be set in its own views, no command or API sets it. VS Code starts a stopped
// server again when its chat calls one of that server's tools, when "Browse Resources" lists it, or when the user
// starts it; so a handed-over copy is stopped again whenever it is seen running (handOver.ts).
import type { ServerStatus } from "../protocol";
import type { CopyState } from "../status/statusModel";
import { PRODUCT, fileUriPath, visible } from "../text";
import { LABEL_SUFFIX } from "./mcpServersModel";

/** The workspace files VS Code's own MCP support also reads in each workspace folder (VS Code 1.139). */
export const FILES_VSCODE_READS = ["/.vscode/mcp.json", "/.mcp.json"] as const;

/** A workspace folder as VS Code numbers them (its index is part of the ids VS Code gives the folder's servers). */
export interface FolderRef {
  /** The folder's `file:` URI. */
  readonly uri: string;
  readonly name: string;
  readonly index: number;
}

/** A server of a workspace file that VS Code's own MCP support also reads, and runs as its own copy. */
export interface VsCodeCopy {
  /** The server's id, in the file and in host_bridge. */
  readonly id: string;
  /** Where it is defined and its id: how a hand-over is remembered. */
  readonly key: string;
  /** The ids VS Code may give its copy (its scheme changed between versions): `mcp.config.ws0.fs`, … */
  readonly definitionIds: readonly string[];
  /** The file, for messages: `alpha/.vscode/mcp.json`. */
  readonly file: string;
  /** Its entry uses `${hostBridge:sharedFolders}`, which VS Code does not fill in: VS Code's copy cannot work. */
  readonly needsSharedFolders: boolean;
}

type CopySource = Pick<ServerStatus, "id" | "source" | "workspaceDefined" | "passesSharedFolders">;

/**
 * Whether VS Code's own MCP support is on: `chat.mcp.access` is not `"none"`. A VS Code without that setting
 * (`access` undefined) has MCP support only where its older `chat.mcp.enabled` is `true`.
 */
export function vsCodeMcpOn(access: unknown, legacyEnabled: unknown): boolean {
  return access === undefined ? legacyEnabled === true : access !== "none";
}

function pathOf(uri: string): string {
  try {
    return new URL(uri).protocol === "file:" ? fileUriPath(uri) : "";
  } catch {
    return "";
  }
}

/**
 * The servers host_bridge reads from a workspace folder's `.vscode/mcp.json` or `.mcp.json`, each with the ids VS Code
 * gives its own copy; also those still awaiting the user's trust in host_bridge, since VS Code can run its copy of
 * them all the same. `folders` are the workspace's folders in VS Code's order. A file whose folder is not found by
 * path (a folder opened through a symbolic link) is matched by the folder's name.
 */
export function vsCodeCopies(servers: readonly CopySource[], folders: readonly FolderRef[]): VsCodeCopy[] {
  const copies: VsCodeCopy[] = [];
  for (const server of servers) {
    if (!server.workspaceDefined) {
      continue;
    }
    const path = pathOf(server.source);
    const file = FILES_VSCODE_READS.find((suffix) => path.endsWith(suffix));
    if (file === undefined) {
      continue;
    }
    const folderPath = path.slice(0, -file.length);
    const folderName = folderPath.split("/").pop() ?? "";
    const byPath = folders.filter((folder) => pathOf(folder.uri).replace(/\/$/, "") === folderPath);
    const byName = byPath.length > 0 ? byPath : folders.filter((folder) => folder.name === folderName);
    copies.push({
      id: server.id,
      key: `${server.source}#${server.id}`,
      definitionIds: byName.flatMap((folder) => definitionIds(file, folder.index, server.id)),
      file: `${byName[0]?.name ?? folderName}${file}`,
      needsSharedFolders: server.passesSharedFolders,
    });
  }
  return copies;
}

/**
 * The ids VS Code gives its copy of server `id` in `file` of the workspace folder numbered `index`: for
 * `.vscode/mcp.json` `mcp.config.ws<index>.<id>` (VS Code 1.139) or `mcp.config.wf<index>.<id>` (later sources), for
 * `.mcp.json` `workspace-dot-mcp.<index>.<id>` or `mcp.config.workspace-dot-mcp.<index>.<id>`.
 */
export function definitionIds(file: (typeof FILES_VSCODE_READS)[number], index: number, id: string): string[] {
  if (file === "/.vscode/mcp.json") {
    return [`mcp.config.ws${index}.${id}`, `mcp.config.wf${index}.${id}`];
  }
  return [`workspace-dot-mcp.${index}.${id}`, `mcp.config.workspace-dot-mcp.${index}.${id}`];
}

/** `“a”`, `“a” and “b”`, `“a”, “b” and “c”`; names escaped. */
function names(ids: readonly string[], suffix = ""): string {
  const quoted = ids.map((id) => `“${visible(id)}${suffix}”`);
  return quoted.length <= 1 ? quoted.join("") : `${quoted.slice(0, -1).join(", ")} and ${quoted.at(-1) ?? ""}`;
}

/**
 * The notice about `copies` (non-empty, none handed over yet), naming MCP Host Bridge: VS Code runs its own copies
 * outside per-folder consent and the sandbox, the ones that cannot work there, and what "Hand Over" does. `listed`:
 * VS Code also lists host_bridge's servers (it has `registerMcpServerDefinitionProvider`).
 */
export function handOverNotice(copies: readonly VsCodeCopy[], listed: boolean): string {
  const one = copies.length === 1;
  const ids = copies.map((copy) => copy.id);
  const files = [...new Set(copies.map((copy) => copy.file))];
  const broken = copies.filter((copy) => copy.needsSharedFolders).map((copy) => copy.id);
  return [
    `${PRODUCT}: VS Code's own MCP support also runs ${names(ids)} from ${files.map(visible).join(" and ")}`,
    ` as its own ${one ? "copy" : "copies"}, outside per-folder consent and the sandbox`,
    ` (VS Code gives ${one ? "it" : "them"} the workspace folder without asking).`,
    broken.length === 0
      ? ""
      : ` ${names(broken)} cannot start there: VS Code does not fill in \${hostBridge:sharedFolders}.`,
    ` Hand ${one ? "it" : "them"} over: VS Code's ${one ? "copy is" : "copies are"} stopped`,
    listed
      ? ` and its chat uses ${names(ids, LABEL_SUFFIX)}, which ${one ? "sees" : "see"} only the folders you share.`
      : ", and only MCP Host Bridge runs them, with the folders you share.",
  ].join("");
}

/**
 * What the extension says once `copies` are handed over: VS Code's copies are stopped, and what only VS Code's own
 * per-workspace switch keeps from happening (VS Code offers extensions no way to set it).
 */
export function handedOverMessage(copies: readonly VsCodeCopy[]): string {
  const one = copies.length === 1;
  return [
    `${PRODUCT}: handed over ${names(copies.map((copy) => copy.id))}; VS Code's own ${one ? "copy is" : "copies are"}`,
    ` stopped. VS Code may start ${one ? "it" : "them"} again (its chat keeps ${one ? "its" : "their"} tools, Browse`,
    ` Resources lists ${one ? "its" : "their"} resources); MCP Host Bridge stops ${one ? "it" : "them"} again when it`,
    ` sees ${one ? "it" : "them"} run. To keep VS Code from starting ${one ? "it" : "them"}, choose “Disable`,
    ` (Workspace)” for ${one ? "it" : "each"} under “MCP Servers - Installed”.`,
  ].join("");
}

/** The button of that message: VS Code's installed MCP servers, where "Disable (Workspace)" is. */
export const SHOW_SERVERS = "Show VS Code's MCP Servers";

/** The notice's buttons. */
export const HandOverChoice = { handOver: "Hand Over", notNow: "Not Now" } as const;

/** What the workspace remembers about VS Code's copies, by {@link VsCodeCopy.key}. */
export interface CopyMemory {
  /** Servers handed over to MCP Host Bridge: VS Code's copy is kept stopped, host_bridge's is offered to VS Code. */
  readonly handedOver: readonly string[];
  /** Servers the user said "Not Now" about: no notice about them again (the status still offers the hand-over). */
  readonly dismissed: readonly string[];
}

/** A {@link CopyMemory} read back from the workspace state; anything else is an empty one. */
export function copyMemory(stored: unknown): CopyMemory {
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
  if (typeof stored !== "object" || stored === null) {
    return { handedOver: [], dismissed: [] };
  }
  const record = stored as Record<string, unknown>;
  return { handedOver: strings(record["handedOver"]), dismissed: strings(record["dismissed"]) };
}

export type { CopyState } from "../status/statusModel";

/** The status of each copy: handed over, or VS Code runs its own copy (which cannot start when it needs folders). */
export function copyStates(copies: readonly VsCodeCopy[], memory: CopyMemory): Map<string, CopyState> {
  const handed = new Set(memory.handedOver);
  const state = (copy: VsCodeCopy): CopyState =>
    handed.has(copy.key) ? "handedOver" : copy.needsSharedFolders ? "vsCodeCopyCannotStart" : "vsCodeRunsItsOwn";
  return new Map(copies.map((copy) => [copy.id, state(copy)]));
}

/** The copies the notice is about: neither handed over nor dismissed. */
export function copiesToNotice(copies: readonly VsCodeCopy[], memory: CopyMemory): VsCodeCopy[] {
  const known = new Set([...memory.handedOver, ...memory.dismissed]);
  return copies.filter((copy) => !known.has(copy.key));
}

/** The server ids whose definition host_bridge offers to VS Code: not those VS Code still runs its own copy of. */
export function offeredToVsCode(copies: readonly VsCodeCopy[], memory: CopyMemory): (id: string) => boolean {
  const handed = new Set(memory.handedOver);
  const own = new Set(copies.filter((copy) => !handed.has(copy.key)).map((copy) => copy.id));
  return (id) => !own.has(id);
}

/** What a server's launch says that a process running it shows on its command line. */
export type Launch = Pick<ServerStatus, "id" | "command" | "args">;

/**
 * Whether the command line of a child process of the extension host runs `server` as VS Code would: every argument
 * of the entry that is neither an option nor holds a `${…}` variable (VS Code fills those in) appears in it as a
 * whole word (a package runner such as npx may rewrite its command line as `npm exec <package> …`, dropping
 * options), and at least one such argument exists. `host-bridge attach` processes (host_bridge's own copy, which
 * VS Code runs) never match.
 */
export function runsServer(commandLine: string, server: Launch): boolean {
  if (/\sattach\s/.test(` ${commandLine} `) && commandLine.includes("--storage-dir")) {
    return false;
  }
  const words = new Set(commandLine.split(/\s+/));
  const literal = (server.args ?? []).filter((arg) => !arg.startsWith("-") && !arg.includes("${") && arg !== "");
  if (literal.length === 0) {
    return false;
  }
  return literal.every((arg) => words.has(arg));
}
