// The read-only file system of `mcp-bridge:` URIs: reads go through the sidecar, and the resources it shows are
// subscribed (so updates reload them). One instance, made in activate() and passed to the documents service.
import * as vscode from "vscode";
import { resourceBytes } from "./contents";
import { SidecarError, type Ctx } from "../ctx";
import * as protocol from "../protocol";
import { RESOURCE_SCHEME, addressKey, decodeResourceUri, encodeResourceUri, type ResourceAddress } from "./resourceUri";
import { waitsForServer } from "../status/statusModel";
import { ResourceMemo, SubscriptionBook } from "./subscriptionBook";
import { errorMessage } from "../text";

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
    if (error.code === protocol.ErrorCodes.resourceNotFound) {
      return vscode.FileSystemError.FileNotFound(uri);
    }
    if (error.code === protocol.ErrorCodes.serverNotRunning || error.code === undefined) {
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
export class ResourceFileSystem implements vscode.FileSystemProvider, vscode.Disposable {
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

  /**
   * Registered for `mcp-bridge:` at once, following open documents, resource updates and server states, for the
   * extension's lifetime.
   */
  constructor(private readonly ctx: Ctx) {
    ctx.pushExtCleanup(
      this,
      vscode.workspace.registerFileSystemProvider(RESOURCE_SCHEME, this, {
        // Shown when someone types into a resource's editor, instead of VS Code's generic "file system is read-only".
        isReadonly: new vscode.MarkdownString(READ_ONLY_REASON),
        isCaseSensitive: true,
      }),
      vscode.workspace.onDidOpenTextDocument((document) => this.documentOpened(document)),
      vscode.workspace.onDidCloseTextDocument((document) => this.documentClosed(document)),
      ctx.onResourceUpdated((params) => this.resourceUpdated(params)),
      ctx.onServerChanged((status) => this.serverChanged(status)),
      ctx.onStarted(() => this.sidecarStarted()),
    );
    for (const document of vscode.workspace.textDocuments) {
      this.documentOpened(document);
    }
  }

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
