// Opening MCP resources: a read-only file system for `mcp-bridge:` URIs that reads through the sidecar,
// subscriptions for opened resources (so updates reload them), and the commands that open and save them.
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { kindOf, resourceBytes, type ResourceBytes } from "./contents";
import { SidecarError, type Ctx } from "./ctx";
import { languageFor } from "./mime";
import * as protocol from "./protocol";
import { asOpenTarget, binarySummary, markdownLink, type OpenTarget } from "./resourceModel";
import {
  RESOURCE_SCHEME,
  addressKey,
  decodeResourceUri,
  encodeResourceUri,
  resourceFileName,
  type ResourceAddress,
} from "./resourceUri";
import { waitsForServer } from "./statusModel";
import { ResourceMemo, SubscriptionBook } from "./subscriptionBook";
import { errorMessage, product } from "./text";

export type { OpenTarget } from "./resourceModel";

// Editors restored at start-up read before the sidecar or their server is up; they wait this long for it.
const READY_TIMEOUT_MS = 20_000;

/** Why a resource's editor cannot be changed, and what to do instead. */
const READ_ONLY_REASON =
  'MCP resources are read-only: the server owns them. Use "MCP: Save Resource As…" to keep a copy you can edit.';

// A read done to decide how to open a resource is handed to the file system's first `readFile`, so the
// resource is not fetched twice; after this long it is fetched again.
const PRIMED_TTL_MS = 30_000;

// What is known about a resource nobody holds (its size, its stamp) is kept this long after its last use:
// VS Code stats a resource just before it opens the document, and again while it reads it.
const KNOWN_TTL_MS = 60_000;

/** The `vscode.Uri` under which a resource opens. */
export function resourceUri(address: ResourceAddress, mimeType?: string): vscode.Uri {
  return vscode.Uri.from(encodeResourceUri(address, mimeType));
}

/** The server and resource URI of an `mcp-bridge:` URI, if it is one. */
export function resourceAddress(uri: vscode.Uri): ResourceAddress | undefined {
  return decodeResourceUri(uri);
}

function toFileSystemError(error: unknown, uri: vscode.Uri): vscode.FileSystemError {
  if (error instanceof SidecarError) {
    if (error.code === SidecarError.NOT_FOUND) {
      return vscode.FileSystemError.FileNotFound(uri);
    }
    if (error.code === SidecarError.NOT_RUNNING || error.code === undefined) {
      return vscode.FileSystemError.Unavailable(error.message);
    }
    return new vscode.FileSystemError(error.message);
  }
  return new vscode.FileSystemError(errorMessage(error));
}

/**
 * The read-only file system of `mcp-bridge:` URIs, plus the subscriptions of the resources it shows.
 *
 * Two kinds of holders keep a subscription, since neither covers every editor: an open text document (also
 * in a background tab, where VS Code does not watch), and a file watch, which VS Code makes for visible
 * editors outside the workspace and the image preview makes for its image (no text document there). A text
 * editor on screen thus has both; each holder is counted once by name, so repeated events never leak one.
 */
class ResourceFileSystem implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changeEmitter.event;

  private readonly book = new SubscriptionBook();
  private readonly primed = new Map<string, { bytes: Uint8Array; expires: number }>();
  /** Per resource: its last known size, modification stamp and every `mcp-bridge:` URI it was seen under. */
  private readonly known = new ResourceMemo<{ size: number; mtime: number; uris: Map<string, vscode.Uri> }>(
    KNOWN_TTL_MS,
    (key) => this.book.isHeldKey(key),
  );
  private watches = 0;

  constructor(private readonly ctx: Ctx) {}

  // --- FileSystemProvider -------------------------------------------------------------------------

  watch(uri: vscode.Uri): vscode.Disposable {
    const address = resourceAddress(uri);
    if (address === undefined) {
      return new vscode.Disposable(() => undefined);
    }
    this.watches += 1;
    const holder = `watch ${this.watches}`;
    this.remember(address, uri);
    this.hold(address, holder);
    return new vscode.Disposable(() => this.release(address, holder));
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const address = resourceAddress(uri);
    if (address === undefined) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    const known = this.remember(address, uri);
    return {
      type: vscode.FileType.File,
      ctime: 0,
      mtime: known.mtime,
      size: known.size,
      permissions: vscode.FilePermission.Readonly,
    };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const address = resourceAddress(uri);
    if (address === undefined) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    const known = this.remember(address, uri);
    const key = addressKey(address);
    const primed = this.primed.get(key);
    this.primed.delete(key);
    if (primed !== undefined && primed.expires > Date.now()) {
      known.size = primed.bytes.byteLength;
      return primed.bytes;
    }
    await this.whenReady(address.server);
    let result: protocol.ReadResult;
    try {
      result = await this.ctx.request(protocol.readResource, { server: address.server, uri: address.uri });
    } catch (error) {
      this.ctx.log.warn(`Reading ${address.uri} from ${address.server} failed: ${errorMessage(error)}`);
      throw toFileSystemError(error, uri);
    }
    const bytes = resourceBytes(result).bytes;
    known.size = bytes.byteLength;
    return bytes;
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw this.readOnly(uri);
  }

  writeFile(uri: vscode.Uri): void {
    throw this.readOnly(uri);
  }

  delete(uri: vscode.Uri): void {
    throw this.readOnly(uri);
  }

  rename(uri: vscode.Uri): void {
    throw this.readOnly(uri);
  }

  // --- used by the commands and events ------------------------------------------------------------

  /**
   * Hand a read already done to the next `readFile` of that resource, and let `stat` report its size before
   * that (the image preview shows it).
   */
  prime(address: ResourceAddress, uri: vscode.Uri, bytes: Uint8Array): void {
    const now = Date.now();
    for (const [key, entry] of this.primed) {
      if (entry.expires <= now) {
        this.primed.delete(key);
      }
    }
    this.primed.set(addressKey(address), { bytes, expires: now + PRIMED_TTL_MS });
    this.remember(address, uri).size = bytes.byteLength;
  }

  /** A text document was opened or closed: it holds its resource's subscription while open. */
  documentOpened(document: vscode.TextDocument): void {
    const address = resourceAddress(document.uri);
    if (address !== undefined) {
      this.remember(address, document.uri);
      this.hold(address, `document ${document.uri.toString()}`);
    }
  }

  documentClosed(document: vscode.TextDocument): void {
    const address = resourceAddress(document.uri);
    if (address !== undefined) {
      this.release(address, `document ${document.uri.toString()}`);
    }
  }

  /** The server says a subscribed resource changed: make VS Code read it again. */
  resourceUpdated(address: ResourceAddress): void {
    const key = addressKey(address);
    this.primed.delete(key);
    const known = this.known.get(key);
    if (known === undefined) {
      return;
    }
    known.mtime = Math.max(Date.now(), known.mtime + 1);
    this.changeEmitter.fire([...known.uris.values()].map((uri) => ({ type: vscode.FileChangeType.Changed, uri })));
  }

  /** A new sidecar process has no subscriptions: make them again as the servers come up. */
  sidecarStarted(): void {
    this.book.resetActive();
    this.primed.clear();
    for (const address of this.book.unsubscribed()) {
      void this.subscribe(address);
    }
  }

  /** A server changed state: a server that stopped lost its subscriptions; one that runs gets them back. */
  serverChanged(status: protocol.ServerStatus): void {
    if (status.state !== "running") {
      this.book.resetActive(status.id);
      return;
    }
    for (const address of this.book.unsubscribed(status.id)) {
      void this.subscribe(address);
    }
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }

  /**
   * Wait, at most {@link READY_TIMEOUT_MS}, while the sidecar starts, its servers' status is not known yet, or
   * the server is unknown or still starting, so an editor restored with the window does not fail before they
   * are up. Returns at once when the server runs, and when it or the sidecar is stopped or failed (the read
   * then fails with the reason).
   */
  private async whenReady(server: string): Promise<void> {
    const waiting = (): boolean =>
      waitsForServer(this.ctx.sidecarState.kind, this.ctx.statusKnown, this.ctx.servers.get(server)?.state);
    if (!waiting()) {
      return;
    }
    await new Promise<void>((resolve) => {
      const subscriptions: vscode.Disposable[] = [];
      const done = (): void => {
        clearTimeout(timer);
        for (const subscription of subscriptions) {
          subscription.dispose();
        }
        resolve();
      };
      const timer = setTimeout(done, READY_TIMEOUT_MS);
      const check = (): void => {
        if (!waiting()) {
          done();
        }
      };
      subscriptions.push(this.ctx.onStateChanged(check), this.ctx.onStarted(check), this.ctx.onServerChanged(check));
    });
  }

  private readOnly(uri: vscode.Uri): vscode.FileSystemError {
    return vscode.FileSystemError.NoPermissions(`${uri.path.split("/").pop() ?? "This resource"}: ${READ_ONLY_REASON}`);
  }

  private remember(address: ResourceAddress, uri: vscode.Uri): { size: number; mtime: number } {
    const known = this.known.touch(addressKey(address), () => ({ size: 0, mtime: Date.now(), uris: new Map() }));
    known.uris.set(uri.toString(), uri);
    return known;
  }

  private hold(address: ResourceAddress, holder: string): void {
    if (this.book.hold(address, holder)) {
      void this.subscribe(address);
    }
  }

  private release(address: ResourceAddress, holder: string): void {
    if (this.book.release(address, holder)) {
      void this.unsubscribe(address);
    }
    if (!this.book.isHeld(address)) {
      // Nothing shows it any more: forget its URIs so the map does not grow with every resource ever opened.
      this.known.delete(addressKey(address));
    }
  }

  private async subscribe(address: ResourceAddress): Promise<void> {
    const status = this.ctx.servers.get(address.server);
    if (status?.state !== "running" || status.resources?.subscribe !== true) {
      return;
    }
    if (!this.book.claim(address)) {
      return;
    }
    try {
      await this.ctx.request(protocol.subscribe, { server: address.server, uri: address.uri });
    } catch (error) {
      this.book.unclaim(address);
      this.ctx.log.info(
        `Not subscribed to ${address.uri} (${address.server}); it will not reload by itself: ${errorMessage(error)}`,
      );
      return;
    }
    if (!this.book.isHeld(address)) {
      // Closed while the subscription was being made.
      await this.unsubscribe(address);
    }
  }

  private async unsubscribe(address: ResourceAddress): Promise<void> {
    try {
      await this.ctx.request(protocol.unsubscribe, { server: address.server, uri: address.uri });
    } catch (error) {
      this.ctx.log.info(`Unsubscribing from ${address.uri} (${address.server}) failed: ${errorMessage(error)}`);
    }
  }
}

const fileSystems = new WeakMap<Ctx, ResourceFileSystem>();

function fileSystemOf(ctx: Ctx): ResourceFileSystem {
  const fileSystem = fileSystems.get(ctx);
  if (fileSystem === undefined) {
    throw new Error("MCP resource documents are not registered; reload the window.");
  }
  return fileSystem;
}

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

/** Read `target` (unless it carries its read) and work out how to show it; `undefined` if cancelled. */
export async function loadResource(ctx: Ctx, target: OpenTarget): Promise<LoadedResource | undefined> {
  const name = target.name ?? target.uri;
  const result =
    target.result ?? (await readWithProgress(ctx, `Reading ${name}…`, { server: target.server, uri: target.uri }));
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
export async function openResource(ctx: Ctx, target: OpenTarget): Promise<void> {
  try {
    const loaded = await loadResource(ctx, target);
    if (loaded === undefined) {
      return;
    }
    await showLoaded(ctx, loaded);
  } catch (error) {
    ctx.showError(`Could not open ${target.name ?? target.uri}`, error);
  }
}

async function showLoaded(ctx: Ctx, loaded: LoadedResource): Promise<void> {
  const fileSystem = fileSystemOf(ctx);
  switch (loaded.kind) {
    case "text": {
      fileSystem.prime(loaded.address, loaded.uri, loaded.content.bytes);
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
      fileSystem.prime(loaded.address, loaded.uri, loaded.content.bytes);
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

/** What "MCP: Insert Resource" puts at the cursor: the text, or a Markdown link for anything else. */
export function insertionFor(loaded: LoadedResource): string {
  if (loaded.kind === "text") {
    return new TextDecoder("utf-8").decode(loaded.content.bytes);
  }
  return markdownLink(loaded.name, loaded.uri.toString());
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

async function saveResourceAs(ctx: Ctx, argument: unknown): Promise<void> {
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
    ctx.showError("Could not save the MCP resource", error);
  }
}

/** Registers the `mcp-bridge:` file system, subscriptions of opened resources and the open/save commands. */
export function registerDocuments(ctx: Ctx): void {
  const fileSystem = new ResourceFileSystem(ctx);
  fileSystems.set(ctx, fileSystem);
  ctx.pushExtCleanup(
    fileSystem,
    vscode.workspace.registerFileSystemProvider(RESOURCE_SCHEME, fileSystem, {
      // Shown when someone types into a resource's editor, instead of VS Code's generic "file system is read-only".
      isReadonly: new vscode.MarkdownString(READ_ONLY_REASON),
      isCaseSensitive: true,
    }),
    vscode.workspace.onDidOpenTextDocument((document) => fileSystem.documentOpened(document)),
    vscode.workspace.onDidCloseTextDocument((document) => fileSystem.documentClosed(document)),
    ctx.onResourceUpdated((params) => fileSystem.resourceUpdated(params)),
    ctx.onServerChanged((status) => fileSystem.serverChanged(status)),
    ctx.onStarted(() => fileSystem.sidecarStarted()),
    vscode.commands.registerCommand("hostBridge.openResource", async (argument: unknown) => {
      const target = asOpenTarget(argument);
      if (target === undefined) {
        void vscode.window.showErrorMessage(
          product(
            '"MCP: Open Resource" needs a resource from the "MCP Resources" view; use "MCP: Pick Resource" to choose one.',
          ),
        );
        return;
      }
      await openResource(ctx, target);
    }),
    vscode.commands.registerCommand("hostBridge.saveResourceAs", (argument: unknown) => saveResourceAs(ctx, argument)),
  );
  for (const document of vscode.workspace.textDocuments) {
    fileSystem.documentOpened(document);
  }
}
