// What VS Code's own MCP support is told about host_bridge's servers (`mcpProvider.ts` turns these into
// `vscode.McpStdioServerDefinition`s). No `vscode` here, so the rules are unit-tested; the copies VS Code runs
// itself from the workspace's files are vsCodeCopies.ts's.
import { createHash } from "node:crypto";
import type { SidecarCommand } from "../sidecar/bootstrap";
import type { ServerStatus } from "../protocol";
import { PRODUCT, visible } from "../text";

/** The id of the provider, as package.json declares it in `contributes.mcpServerDefinitionProviders`. */
export const PROVIDER_ID = "hostBridge.servers";

/** How a definition reaches the sidecar: how it is run, the workspace it serves and its storage directory. */
export interface AttachTarget {
  /** How the sidecar is run (`<command> <args> serve`); `attach` runs the same way. */
  sidecar: SidecarCommand;
  /** Path of the first workspace folder: `attach --workspace` finds this window's sidecar by it. */
  workspace: string;
  /** The sidecar's storage directory (`initializationOptions.storageDir`): its gateway registers there. */
  storageDir: string;
}

/** One server as VS Code's MCP support gets it: the fields of `vscode.McpStdioServerDefinition`. */
export interface AttachDefinition {
  /** The server's id in the sidecar. */
  id: string;
  /** What VS Code shows: `<id> (MCP Host Bridge)`. */
  label: string;
  command: string;
  args: string[];
  /** Changes when the server's identity (where it is defined, its launch configuration) changes. */
  version: string;
  /** The workspace folder the `attach` process runs in. */
  cwd: string;
}

/** The suffix of every label, so VS Code's list tells host_bridge's servers from its own. */
export const LABEL_SUFFIX = ` (${PRODUCT})`;

/**
 * Whether VS Code may use a server through the sidecar: it is configured and, when a workspace file defines it,
 * the user trusted it (a server awaiting trust has never run, so there is nothing to attach to).
 */
export function offered(server: Pick<ServerStatus, "state">): boolean {
  return server.state !== "awaitingTrust";
}

/** A short, stable version string for a server identity (the identity itself is long and opaque). */
export function identityVersion(identity: string): string {
  return createHash("sha256").update(identity).digest("hex").slice(0, 16);
}

/**
 * The definition VS Code runs for `server`: `<sidecar command> attach <id> --workspace … --storage-dir …`, e.g.
 * `python -I -S <extension>/python/run_sidecar.py attach …` or `python -m host_bridge attach …`.
 */
export function attachDefinition(
  server: Pick<ServerStatus, "id" | "identity">,
  target: AttachTarget,
): AttachDefinition {
  return {
    id: server.id,
    label: `${visible(server.id)}${LABEL_SUFFIX}`,
    command: target.sidecar.command,
    args: [
      ...target.sidecar.args,
      "attach",
      server.id,
      "--workspace",
      target.workspace,
      "--storage-dir",
      target.storageDir,
    ],
    version: identityVersion(server.identity),
    cwd: target.workspace,
  };
}

/**
 * The definitions for every offered server, in the sidecar's order; none without a target (no workspace folder,
 * or the sidecar has not started yet).
 */
export function attachDefinitions(
  servers: readonly Pick<ServerStatus, "id" | "identity" | "state">[],
  target: AttachTarget | undefined,
): AttachDefinition[] {
  if (target === undefined) {
    return [];
  }
  return servers.filter(offered).map((server) => attachDefinition(server, target));
}

/** A key that differs exactly when VS Code must be told the definitions changed. */
export function definitionsKey(definitions: readonly AttachDefinition[]): string {
  return JSON.stringify(
    definitions.map(({ label, command, args, version, cwd }) => [label, command, args, version, cwd]),
  );
}
