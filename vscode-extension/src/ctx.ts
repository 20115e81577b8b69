// The one object that owns the sidecar client, the output channel, the known server states and every
// disposable, in two lifetimes: the extension's (until it deactivates) and the current client's (until that
// client is stopped and disposed). Features (consent, pickers, documents, status, tree) receive it and never
// touch the LanguageClient's lifecycle themselves.
import * as vscode from "vscode";
import type { CancellationToken, RequestParam, RequestType } from "vscode-jsonrpc";
import { ResponseError } from "vscode-languageclient";
import type { LanguageClient } from "vscode-languageclient/node";
import { OpenPickers } from "./ui/openPickers";
import * as protocol from "./protocol";
import { askSignIn, getSecret, storeSecret } from "./signIn/signIn";
import { errorMessage, product } from "./text";

/** Handles `hostBridge/askConsent`; set by the consent feature. */
export type ConsentHandler = (
  params: protocol.AskConsentParams,
  token: CancellationToken,
) => Promise<protocol.AskConsentResult>;

/**
 * A sidecar request failed; `message` is the sidecar's sentence, ready to show, and `code` one of the sidecar's
 * {@link protocol.ErrorCodes} (generated from its error table), or `undefined` when no answer came.
 */
export class SidecarError extends Error {
  constructor(
    message: string,
    readonly code: number | undefined,
    readonly data: unknown,
  ) {
    super(message);
  }

  /** Whether `error` is the answer to a request the editor cancelled (nothing to report). */
  static isCancellation(error: unknown): boolean {
    return error instanceof SidecarError && error.code === protocol.ErrorCodes.requestCancelled;
  }
}

/** How many times a starting sidecar's status is asked for before what it says counts as loaded. */
const MAX_STATUS_ATTEMPTS = 120;

/** The least time between two of those questions (the sidecar answers at once while it loads its core). */
const STATUS_RETRY_MS = 250;

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What the status bar and pickers show about the sidecar itself. */
export type SidecarState =
  | { kind: "starting"; detail?: string }
  | { kind: "running" }
  | { kind: "stopped"; reason?: string }
  | { kind: "failed"; reason: string };

export class Ctx implements vscode.Disposable {
  /** The sidecar's and MCP servers' log (`[<server id>] ` prefixed lines come from the servers). */
  readonly log: vscode.LogOutputChannel;
  /** Latest `hostBridge/serverChanged` per server id, in first-seen order. */
  readonly servers = new Map<string, protocol.ServerStatus>();
  /** The extension's pickers that are open now: a consent prompt waits until they close. */
  readonly pickers = new OpenPickers();
  /** The consent questions shown now: a notice waits until they are answered (a modal would hide it). */
  readonly prompts = new OpenPickers();

  private client: LanguageClient | undefined;
  /** Disposed when the extension deactivates, last first. */
  private readonly extCleanup: vscode.Disposable[] = [];
  /** Disposed when the current client has been stopped and disposed: its handlers and listeners. */
  private clientCleanup: vscode.Disposable[] = [];
  private consentHandler: ConsentHandler | undefined;
  private state: SidecarState = { kind: "starting" };
  private known = false;

  private readonly serverChangedEmitter = new vscode.EventEmitter<protocol.ServerStatus>();
  private readonly resourcesChangedEmitter = new vscode.EventEmitter<protocol.ServerNotification>();
  private readonly resourceUpdatedEmitter = new vscode.EventEmitter<protocol.ResourceUpdatedNotification>();
  private readonly stateEmitter = new vscode.EventEmitter<SidecarState>();
  private readonly startedEmitter = new vscode.EventEmitter<void>();

  /** A server's status changed (state, shared roots, last error …). */
  readonly onServerChanged = this.serverChangedEmitter.event;
  /** A server's resource list changed: pickers and the tree should reload it. */
  readonly onResourcesChanged = this.resourcesChangedEmitter.event;
  /** A subscribed resource changed. */
  readonly onResourceUpdated = this.resourceUpdatedEmitter.event;
  /** The sidecar itself started, stopped or failed. */
  readonly onStateChanged = this.stateEmitter.event;
  /** A new sidecar process is running and {@link servers} holds its status: re-subscribe, reload lists. */
  readonly onStarted = this.startedEmitter.event;

  constructor(readonly extension: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel("MCP Host Bridge", { log: true });
    this.pushExtCleanup(
      this.log,
      this.serverChangedEmitter,
      this.resourcesChangedEmitter,
      this.resourceUpdatedEmitter,
      this.stateEmitter,
      this.startedEmitter,
    );
  }

  /** Dispose `items` when the extension deactivates (commands, views, listeners of the extension's lifetime). */
  pushExtCleanup(...items: vscode.Disposable[]): void {
    this.extCleanup.push(...items);
  }

  /** Dispose `items` when the current client has been stopped (handlers and listeners of that one client). */
  pushClientCleanup(...items: vscode.Disposable[]): void {
    this.clientCleanup.push(...items);
  }

  /** The client that was attached is stopped and disposed: end its lifetime. */
  endClientLifetime(): void {
    for (const item of this.clientCleanup.splice(0).reverse()) {
      item.dispose();
    }
  }

  /** The sidecar's current state. */
  get sidecarState(): SidecarState {
    return this.state;
  }

  /** Install the `hostBridge/askConsent` handler (one per extension). */
  setConsentHandler(handler: ConsentHandler): void {
    this.consentHandler = handler;
  }

  /** Send a request to the sidecar; rejects with a {@link SidecarError} whose message can be shown as is. */
  async request<P, R>(
    type: RequestType<P, R, void>,
    params: RequestParam<P>,
    token?: vscode.CancellationToken,
  ): Promise<R> {
    const client = this.client;
    if (client === undefined || this.state.kind !== "running") {
      throw new SidecarError(this.notRunningMessage(), undefined, undefined);
    }
    try {
      return await client.sendRequest(type, params, token);
    } catch (error) {
      if (error instanceof ResponseError) {
        throw new SidecarError(error.message, error.code, error.data);
      }
      throw new SidecarError(errorMessage(error), undefined, undefined);
    }
  }

  /**
   * Ask the sidecar for every server and candidate; refreshes {@link servers}. Rejects while it is down. Until the
   * sidecar has read its server configs and the workspace, the answer says `ready: false` and may list none yet.
   */
  async status(): Promise<protocol.StatusResult> {
    const client = this.client;
    const result = await this.request(protocol.status, {});
    if (client === this.client) {
      this.servers.clear();
      for (const server of result.servers) {
        this.servers.set(server.id, server);
      }
      this.known ||= result.ready;
    }
    return result;
  }

  /**
   * Whether {@link servers} reflects the running sidecar: since it started, a status has arrived that it gave once it
   * had read its server configs (an empty list before that means "not loaded yet", not "no servers").
   */
  get statusKnown(): boolean {
    return this.known;
  }

  /**
   * Called by the sidecar module (`sidecar.ts`) for each new client: wires its notifications into the events. A client that
   * is no longer the current one (replaced by a restart) is ignored, and its consent questions get no answer.
   */
  attach(client: LanguageClient): void {
    this.client = client;
    const current = () => this.client === client;
    this.pushClientCleanup(
      client.onNotification(protocol.serverChanged, (status) => {
        if (current()) {
          this.servers.set(status.id, status);
          this.serverChangedEmitter.fire(status);
        }
      }),
      client.onNotification(protocol.resourcesChanged, (params) => {
        if (current()) {
          this.resourcesChangedEmitter.fire(params);
        }
      }),
      client.onNotification(protocol.resourceUpdated, (params) => {
        if (current()) {
          this.resourceUpdatedEmitter.fire(params);
        }
      }),
      client.onRequest(protocol.askConsent, async (params, token) => {
        if (!current() || this.consentHandler === undefined) {
          return { decisions: [] };
        }
        return this.consentHandler(params, token);
      }),
      client.onRequest(protocol.signIn, (params) =>
        current() ? askSignIn(params, this.log) : Promise.resolve({ opened: false }),
      ),
      client.onRequest(protocol.getSecret, (params) => getSecret(this.extension.secrets, params)),
      client.onRequest(protocol.storeSecret, (params) => storeSecret(this.extension.secrets, params)),
    );
  }

  /**
   * Forget the current client (it is being stopped); its messages are ignored from now on. Its lifetime ends
   * with {@link endClientLifetime} once it is disposed.
   */
  detach(): void {
    this.client = undefined;
  }

  /** Called by the sidecar module (`sidecar.ts`) when the sidecar state changes. */
  setState(state: SidecarState): void {
    this.state = state;
    if (state.kind !== "running") {
      // Nothing is known about servers of a sidecar that is not running; the next one reports afresh.
      this.servers.clear();
      this.known = false;
    }
    this.stateEmitter.fire(state);
    if (state.kind === "running") {
      void this.loadStatus();
    }
  }

  /**
   * Load the status of a sidecar that just started, then tell the features ({@link onStarted}). While the sidecar is
   * still reading its configs it answers `ready: false` at once: ask again until it is ready (each answer waits up to
   * half a second for the workspace), so that no feature takes "not loaded yet" for "no servers".
   */
  private async loadStatus(): Promise<void> {
    const client = this.client;
    const asked = Date.now();
    try {
      for (let attempt = 0; attempt < MAX_STATUS_ATTEMPTS; attempt += 1) {
        const started = Date.now();
        const result = await this.status();
        if (result.ready || this.client !== client || this.state.kind !== "running") {
          if (attempt > 0) {
            this.log.info(`the sidecar has read its server configs (${Date.now() - asked} ms after it ran)`);
          }
          break;
        }
        await pause(Math.max(0, STATUS_RETRY_MS - (Date.now() - started)));
      }
    } catch (error) {
      this.log.warn(`could not load the servers' status: ${errorMessage(error)}`);
    }
    if (this.state.kind === "running" && this.client === client) {
      // Ready, or asked for long enough: what is known now is what there is.
      this.known = true;
      this.startedEmitter.fire();
    }
  }

  /** Show an error from a request to the user, unless it was a cancellation. */
  showError(what: string, error: unknown): void {
    if (SidecarError.isCancellation(error)) {
      return;
    }
    const message = errorMessage(error);
    this.log.error(`${what}: ${message}`);
    void vscode.window.showErrorMessage(product(`${what}: ${message}`));
  }

  private notRunningMessage(): string {
    switch (this.state.kind) {
      case "starting":
        return "The MCP host bridge is still starting; try again in a moment.";
      case "failed":
        return `The MCP host bridge is not running: ${this.state.reason} Run "MCP: Restart Host Bridge" after fixing it.`;
      default:
        return 'The MCP host bridge is not running; run "MCP: Restart Host Bridge".';
    }
  }

  dispose(): void {
    this.endClientLifetime();
    for (const item of this.extCleanup.splice(0).reverse()) {
      item.dispose();
    }
  }
}
