// Opening and saving MCP resources: read one (with a cancellable progress), show it by its kind (an editor, the
// image preview, or "Save As…" for what VS Code cannot show) under `mcp-bridge:`, and save a copy elsewhere.
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { kindOf, resourceBytes, type ResourceBytes } from "./contents";
import { SidecarError, type Ctx } from "../ctx";
import { languageFor } from "./mime";
import * as protocol from "../protocol";
import { type ResourceFileSystem, resourceUri } from "./resourceFileSystem";
import { asOpenTarget, binarySummary, markdownLink, type OpenTarget } from "./resourceModel";
import { RESOURCE_SCHEME, resourceFileName, type ResourceAddress } from "./resourceUri";
import { product } from "../text";

export type { OpenTarget } from "./resourceModel";

/** Read a resource with a cancellable progress notification; `undefined` when the user cancelled. */
export async function readWithProgress(
  ctx: Ctx,
  title: string,
  params: protocol.ReadResourceParams,
): Promise<protocol.ReadResult | undefined> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: product(title), cancellable: true },
    async (_progress, token) => {
      try {
        return await ctx.request(protocol.readResource, params, token);
      } catch (error) {
        if (token.isCancellationRequested || SidecarError.isCancellation(error)) {
          return undefined;
        }
        throw error;
      }
    },
  );
}

/** A resource read and ready to show: where it opens, its bytes and how to show them. */
export interface LoadedResource {
  readonly address: ResourceAddress;
  readonly name: string;
  readonly uri: vscode.Uri;
  readonly fileName: string;
  readonly content: ResourceBytes;
  readonly mimeType: string | undefined;
  readonly kind: "text" | "image" | "binary";
}

/** What "MCP: Insert Resource" puts at the cursor: the text, or a Markdown link for anything else. */
export function insertionFor(loaded: LoadedResource): string {
  if (loaded.kind === "text") {
    return new TextDecoder("utf-8").decode(loaded.content.bytes);
  }
  return markdownLink(loaded.name, loaded.uri.toString());
}

/**
 * Opens and saves resources; a read done to decide how to show one is handed to the `mcp-bridge:` file system
 * (`fileSystem`), so the editor does not fetch it again.
 */
export class ResourceDocuments {
  constructor(
    private readonly ctx: Ctx,
    private readonly fileSystem: ResourceFileSystem,
  ) {}

  /** Read `target` (unless it carries its read) and work out how to show it; `undefined` if cancelled. */
  async load(target: OpenTarget): Promise<LoadedResource | undefined> {
    const name = target.name ?? target.uri;
    const result =
      target.result ??
      (await readWithProgress(this.ctx, `Reading ${name}…`, { server: target.server, uri: target.uri }));
    if (result === undefined) {
      return undefined;
    }
    const address = { server: target.server, uri: target.result !== undefined ? result.uri : target.uri };
    const content = resourceBytes(result);
    const mimeType = content.mimeType ?? target.mimeType;
    const fileName = resourceFileName(address.uri, mimeType, target.name);
    return {
      address,
      name,
      uri: resourceUri(address, mimeType),
      fileName,
      content,
      mimeType,
      kind: kindOf({ ...content, mimeType }, fileName),
    };
  }

  /**
   * Open a resource: text in an editor (language from the MIME type or name; HTML as source), raster images
   * in the image preview, anything else as a message offering "Save As…".
   */
  async open(target: OpenTarget): Promise<void> {
    try {
      const loaded = await this.load(target);
      if (loaded === undefined) {
        return;
      }
      await this.show(loaded);
    } catch (error) {
      this.ctx.showError(`Could not open ${target.name ?? target.uri}`, error);
    }
  }

  /** "MCP: Open Resource": `argument` is a resource from the "MCP Resources" view. */
  async openArgument(argument: unknown): Promise<void> {
    const target = asOpenTarget(argument);
    if (target === undefined) {
      void vscode.window.showErrorMessage(
        product(
          '"MCP: Open Resource" needs a resource from the "MCP Resources" view; use "MCP: Pick Resource" to choose one.',
        ),
      );
      return;
    }
    await this.open(target);
  }

  /** "MCP: Save Resource As…": the resource `argument` names (an editor title's URI), else the active editor's. */
  async saveAs(argument: unknown): Promise<void> {
    const uri = argument instanceof vscode.Uri && argument.scheme === RESOURCE_SCHEME ? argument : activeResourceUri();
    if (uri === undefined) {
      void vscode.window.showInformationMessage(
        product(
          'no MCP resource is open in the active editor. Open one with "MCP: Pick Resource", then run "MCP: Save Resource As…".',
        ),
      );
      return;
    }
    try {
      const bytes = await vscode.workspace.fs.readFile(uri);
      await saveBytes(bytes, uri.path.split("/").pop() || "resource");
    } catch (error) {
      this.ctx.showError("Could not save the MCP resource", error);
    }
  }

  private async show(loaded: LoadedResource): Promise<void> {
    switch (loaded.kind) {
      case "text": {
        this.fileSystem.prime(loaded.address, loaded.uri, loaded.content.bytes);
        let document = await vscode.workspace.openTextDocument(loaded.uri);
        const language = languageFor(loaded.mimeType, loaded.fileName);
        if (document.languageId !== language) {
          try {
            document = await vscode.languages.setTextDocumentLanguage(document, language);
          } catch {
            // The language's extension is not installed: keep what VS Code chose.
          }
        }
        await vscode.window.showTextDocument(document, { preview: true });
        return;
      }
      case "image":
        this.fileSystem.prime(loaded.address, loaded.uri, loaded.content.bytes);
        await vscode.commands.executeCommand("vscode.openWith", loaded.uri, "imagePreview.previewEditor");
        return;
      case "binary": {
        const saveAs = "Save As…";
        const choice = await vscode.window.showInformationMessage(
          product(
            `${binarySummary(loaded.name, loaded.mimeType, loaded.content.bytes.byteLength)}. VS Code cannot show this type; save it to open it with another program.`,
          ),
          saveAs,
        );
        if (choice === saveAs) {
          await saveBytes(loaded.content.bytes, loaded.fileName);
        }
        return;
      }
    }
  }
}

async function saveBytes(bytes: Uint8Array, fileName: string): Promise<boolean> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const defaultUri =
    folder !== undefined && folder.scheme === "file"
      ? vscode.Uri.joinPath(folder, fileName)
      : vscode.Uri.file(path.join(os.homedir(), fileName));
  const target = await vscode.window.showSaveDialog({ defaultUri, saveLabel: "Save Resource" });
  if (target === undefined) {
    return false;
  }
  await vscode.workspace.fs.writeFile(target, bytes);
  void vscode.window.showInformationMessage(
    product(`saved to ${target.scheme === "file" ? target.fsPath : target.toString()}.`),
  );
  return true;
}

/** The `mcp-bridge:` URI of the active editor (text or image preview), if it shows one. */
function activeResourceUri(): vscode.Uri | undefined {
  const textUri = vscode.window.activeTextEditor?.document.uri;
  if (textUri?.scheme === RESOURCE_SCHEME) {
    return textUri;
  }
  const input: unknown = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  if (input instanceof vscode.TabInputText || input instanceof vscode.TabInputCustom) {
    return input.uri.scheme === RESOURCE_SCHEME ? input.uri : undefined;
  }
  return undefined;
}
