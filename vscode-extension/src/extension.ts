// Composition root: builds the context, registers each feature, starts the sidecar. Nothing else.
import type * as vscode from "vscode";
import { Sidecar } from "./sidecar";
import { registerConsent } from "./consent";
import { Ctx } from "./ctx";
import { ResourceDocuments, registerDocuments } from "./documents";
import { registerPickers } from "./pickers";
import { ResourceFileSystem } from "./resourceFileSystem";
import { registerStatus } from "./status";
import { registerTree } from "./tree";

let ctx: Ctx | undefined;
let sidecar: Sidecar | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  ctx = new Ctx(context);
  sidecar = new Sidecar(ctx);
  ctx.pushExtCleanup(sidecar);
  registerConsent(ctx);
  const documents = new ResourceDocuments(ctx, new ResourceFileSystem(ctx));
  registerDocuments(ctx, documents);
  registerPickers(ctx, documents);
  registerStatus(ctx, sidecar);
  registerTree(ctx);
  await sidecar.start();
}

export async function deactivate(): Promise<void> {
  const current = ctx;
  ctx = undefined;
  // Stop the sidecar properly (shutdown, exit) so its MCP servers stop before the extension host exits.
  await sidecar?.stop();
  sidecar = undefined;
  current?.dispose();
}
