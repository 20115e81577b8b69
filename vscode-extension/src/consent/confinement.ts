// What confines a server, in the words of the trust and folder dialogs: whether the OS sandbox will hold it to the
// folders the user chooses, and with what, or that nothing does and why. From the sidecar's `ServerStatus.sandbox`
// (before a server's first start it says what that start will get on this machine: `planned`). No `vscode` here.
import type * as protocol from "../protocol";
import { oneLine, visible } from "../text";

/** What the dialogs know of a server's confinement: its sandbox as the sidecar reports it (stdio only). */
export type Confinement = Pick<protocol.ServerStatus, "sandbox">;

/** The OS mechanism in words: `Linux Landlock`, `macOS sandbox-exec`. */
export function mechanismName(mechanism: string | undefined): string {
  switch (mechanism) {
    case "landlock":
      return "Linux Landlock";
    case "sandbox-exec":
      return "macOS sandbox-exec";
    default:
      return "the OS sandbox";
  }
}

/** Why a server is not sandboxed, from its setting and the sidecar's sentence. */
function whyNot(server: Pick<protocol.ServerRef, "sandboxSetting">, sandbox: protocol.SandboxState): string {
  if (server.sandboxSetting === "off") {
    return 'its entry says "sandbox": "off"';
  }
  if (sandbox.setting === "off") {
    return "your setting hostBridge.sandbox is off";
  }
  const reason = oneLine(sandbox.summary).replace(/\.$/, "");
  return reason === "" ? "this machine cannot enforce it" : visible(reason);
}

/**
 * One sentence for a dialog: what will confine `server` once it runs with the folders being chosen. `folders`
 * names them ("the folders you choose", "“ws” if you share it"). Says plainly when nothing confines it: an HTTP
 * server runs elsewhere, and a stdio server without the sandbox can read and change every file the user can.
 */
export function confinementSentence(
  server: Pick<protocol.ServerRef, "transport" | "sandboxSetting">,
  status: Confinement | undefined,
  folders = "the folders you choose",
): string {
  if (server.transport === "http") {
    return "It runs elsewhere and is only contacted at its URL, so no sandbox on this machine confines it; it learns of the folders you share as MCP roots.";
  }
  const sandbox = status?.sandbox;
  if (sandbox === undefined) {
    return server.sandboxSetting === "off"
      ? 'Not sandboxed: its entry says "sandbox": "off", so it can read and change every file your account can.'
      : "Whether the OS sandbox confines it shows in “MCP: Show Server Status” once it starts.";
  }
  if (sandbox.enforced) {
    return `Sandboxed: ${mechanismName(sandbox.mechanism)} confines it, so it will be able to read and change only ${folders} (and a private temp folder); it can read system folders and its own runtime, and everything else is refused.`;
  }
  return `Not sandboxed (${whyNot(server, sandbox)}): it can read and change every file your account can; the folders you share only tell it where to work.`;
}
