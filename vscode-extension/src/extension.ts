// Composition root: builds the context and the sidecar, makes each feature with what it needs, registers the
// command table, starts the sidecar. Nothing else.
//
// Activation returns at once: the sidecar starts in the background (the features show "starting" meanwhile), so
// VS Code does not count its start-up as the extension's activation time.
import * as vscode from "vscode";
import { type Features, registerCommands } from "./commands";
import { Consent } from "./consent/consent";
import { Ctx } from "./ctx";
import { ResourceDocuments } from "./resources/documents";
import { HandOver } from "./vscodeMcp/handOver";
import { VsCodeMcp, vsCodeListsServers } from "./vscodeMcp/mcpProvider";
import { ResourcePickers } from "./picker/pickers";
import { ResourceFileSystem } from "./resources/resourceFileSystem";
import { Sidecar } from "./sidecar/sidecar";
import { StatusView } from "./status/status";
import { errorMessage } from "./text";
import { ResourcesView } from "./tree/tree";
import { WorkspaceTrustWait } from "./consent/workspaceTrust";

let ctx: Ctx | undefined;
let sidecar: Sidecar | undefined;

export function activate(context: vscode.ExtensionContext): void {
  ctx = new Ctx(context);
  sidecar = new Sidecar(ctx);
  ctx.pushExtCleanup(sidecar);
  const documents = new ResourceDocuments(ctx, new ResourceFileSystem(ctx));
  const trust = new WorkspaceTrustWait(ctx);
  const current = sidecar;
  const handOver = new HandOver(ctx, vsCodeListsServers(), () => current.pid);
  const features: Features = {
    ctx,
    consent: new Consent(ctx),
    documents,
    handOver,
    pickers: new ResourcePickers(ctx, documents, trust),
    status: new StatusView(ctx, sidecar, trust, handOver),
    tree: new ResourcesView(ctx, trust),
  };
  ctx.pushExtCleanup(...registerCommands(features, vscode.commands.registerCommand));
  new VsCodeMcp(ctx, sidecar, handOver);
  const log = ctx.log;
  sidecar.start().catch((error: unknown) => log.error(`the sidecar did not start: ${errorMessage(error)}`));
}

export async function deactivate(): Promise<void> {
  const current = ctx;
  ctx = undefined;
  // Stop the sidecar properly (shutdown, exit) so its MCP servers stop before the extension host exits.
  await sidecar?.stop();
  sidecar = undefined;
  current?.dispose();
}
