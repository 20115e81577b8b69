// "MCP: Pick Resource" and "MCP: Insert Resource": one quick pick over every server's resources and
// templates, filled page by page as the sidecar answers; templates ask their variables with completions.
import * as vscode from "vscode";
import type { CommandId } from "../commandIds";
import type { Ctx } from "../ctx";
import { type ResourceDocuments, insertionFor, readWithProgress, type OpenTarget } from "../resources/documents";
import { displayName, templateResultName } from "../resources/resourceModel";
import { PickerMemory } from "./memory";
import { ResourcePicker } from "./resourcePicker";
import { askArguments } from "./templateArguments";
import { product } from "../text";
import type { WorkspaceTrustWait } from "../consent/workspaceTrust";
import { waitingSentence } from "../consent/workspaceTrustModel";
import type { Notice } from "../resources/resourceModel";

/**
 * Let the user choose a resource, or a template and its arguments (which is then read); what to open or
 * insert, `undefined` when the user gave up or the template could not be read (the error was shown).
 */
export async function pickResource(
  ctx: Ctx,
  memory: PickerMemory,
  title: string,
  moreNotices: () => readonly Notice[] = () => [],
): Promise<OpenTarget | undefined> {
  const sidecar = ctx.sidecarState.kind;
  if (sidecar === "stopped" || sidecar === "failed") {
    try {
      // Fails at once with the sentence that says why the bridge is not running and what to do.
      await ctx.status();
    } catch (error) {
      ctx.showError("Cannot list MCP resources", error);
      return undefined;
    }
  }
  // While the host bridge starts, the picker opens at once and fills in once it runs.
  const choice = await ResourcePicker.choose(ctx, memory, title, moreNotices);
  if (choice === undefined) {
    return undefined;
  }
  if (choice.kind === "showStatus") {
    // A notice was picked: the status says more about that server (and offers to restart it). Awaited, so that the
    // pickers count as open without a gap in which a waiting consent question could show first.
    await vscode.commands.executeCommand("hostBridge.showStatus" satisfies CommandId);
    return undefined;
  }
  if (choice.kind === "resource") {
    const { server, uri, mimeType } = choice.item;
    return { server, uri, name: displayName(choice.item), ...(mimeType !== undefined ? { mimeType } : {}) };
  }
  const template = choice.item;
  const args = await askArguments(ctx, template);
  if (args === undefined) {
    return undefined;
  }
  const name = displayName(template);
  try {
    const result = await readWithProgress(ctx, `Reading ${name}…`, {
      server: template.server,
      uriTemplate: template.uriTemplate,
      arguments: args,
    });
    if (result === undefined) {
      return undefined;
    }
    return {
      server: template.server,
      uri: result.uri,
      name: templateResultName(template, result.uri),
      ...(template.mimeType !== undefined ? { mimeType: template.mimeType } : {}),
      result,
    };
  } catch (error) {
    ctx.showError(`Could not read ${name}`, error);
    return undefined;
  }
}

const NO_EDITOR = product(
  'open an editor and place the cursor where the resource should go, then run "MCP: Insert Resource" again.',
);

async function insertResource(
  ctx: Ctx,
  memory: PickerMemory,
  documents: ResourceDocuments,
  moreNotices: () => readonly Notice[],
): Promise<void> {
  if (vscode.window.activeTextEditor === undefined) {
    void vscode.window.showInformationMessage(NO_EDITOR);
    return;
  }
  const target = await ctx.pickers.during(() => pickResource(ctx, memory, product("Insert Resource"), moreNotices));
  if (target === undefined) {
    return;
  }
  try {
    const loaded = await documents.load(target);
    if (loaded === undefined) {
      return;
    }
    // The picker took the focus; the editor to insert into is the one active now.
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showInformationMessage(NO_EDITOR);
      return;
    }
    const text = insertionFor(loaded);
    const done = await editor.edit((builder) => {
      for (const selection of editor.selections) {
        builder.replace(selection, text);
      }
    });
    if (!done) {
      void vscode.window.showErrorMessage(
        product(
          `could not insert ${loaded.name}: the editor refused the change (is it read-only?). Try another editor.`,
        ),
      );
    }
  } catch (error) {
    ctx.showError(`Could not insert ${target.name ?? target.uri}`, error);
  }
}

/** "MCP: Pick Resource" and "MCP: Insert Resource"; what they choose is read and shown through `documents`. */
export class ResourcePickers {
  /** The servers' last listings and their quick pick items, kept between openings. */
  private readonly memory: PickerMemory;

  constructor(
    private readonly ctx: Ctx,
    private readonly documents: ResourceDocuments,
    private readonly trust: WorkspaceTrustWait,
  ) {
    this.memory = new PickerMemory(ctx);
  }

  /** The picker's row about the workspace's servers that wait for workspace trust, if any. */
  private readonly trustNotices = (): readonly Notice[] => {
    const text = waitingSentence(this.trust.waiting, false);
    return text === "" ? [] : [{ severity: "warning", text }];
  };

  /** "MCP: Pick Resource": choose a resource and open it. */
  async pick(): Promise<void> {
    // Marked open while its pickers show, so a consent prompt waits instead of closing them.
    const target = await this.ctx.pickers.during(() =>
      pickResource(this.ctx, this.memory, product("Pick Resource"), this.trustNotices),
    );
    if (target !== undefined) {
      await this.documents.open(target);
    }
  }

  /** "MCP: Insert Resource": choose a resource and put it at the cursor of the active editor. */
  insert(): Promise<void> {
    return insertResource(this.ctx, this.memory, this.documents, this.trustNotices);
  }
}
