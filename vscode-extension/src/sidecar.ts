// Starts, restarts and stops the sidecar (`python -m host_bridge serve`) through vscode-languageclient.
// Restarts are serialized (at most one queued); after 5 crashes in 3 minutes it stays stopped and says so.
import { spawn, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import * as readline from "node:readline";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type CloseHandlerResult,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type StaticFeature,
} from "vscode-languageclient/node";
import { CrashPolicy, LifecycleQueue, LineRing, MAX_CRASHES } from "./crashPolicy";
import type { Ctx } from "./ctx";
import type { InitializationOptions } from "./protocol";
import { sidecarPython } from "./python";
import {
  type SidecarSettings,
  configurationParams,
  initializationOptionsFor,
  restartSettingsChanged,
  sandboxSetting,
  settingsChange,
  sidecarSettings,
} from "./settingsModel";
import { errorMessage } from "./text";

/** Declares `experimental.hostBridge.consentUi`: this editor answers `hostBridge/askConsent`. */
const consentUiFeature: StaticFeature = {
  fillClientCapabilities(capabilities) {
    const experimental: unknown = capabilities.experimental;
    capabilities.experimental = {
      ...(typeof experimental === "object" && experimental !== null ? experimental : {}),
      hostBridge: { consentUi: true },
    };
  },
  initialize() {},
  getState() {
    return { kind: "static" };
  },
  clear() {},
};

/** The servers and workspace-config switch as the sidecar must see them now (nothing from files in Restricted Mode). */
function currentSettings(): SidecarSettings {
  const config = vscode.workspace.getConfiguration("hostBridge");
  return sidecarSettings(
    config.get<unknown>("servers", {}),
    config.get<boolean>("readWorkspaceConfig", true),
    vscode.workspace.isTrusted,
  );
}

/**
 * The options the sidecar gets in `initialize`; workspace-defined servers only in a trusted workspace, and the
 * sandbox default from the user's settings only (never from the workspace's).
 */
export function initializationOptions(ctx: Ctx): InitializationOptions {
  const sandbox = sandboxSetting(vscode.workspace.getConfiguration("hostBridge").inspect<unknown>("sandbox"));
  return initializationOptionsFor(ctx.extension.globalStorageUri.fsPath, currentSettings(), sandbox);
}

export class Sidecar implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** The process the current client spawned last (the library respawns it after a crash). */
  private child: ChildProcess | undefined;
  /** Whether the current client has reached Running: a crash before that is a failed start, not restarted. */
  private everRunning = false;
  private readonly queue = new LifecycleQueue();
  private readonly crashes = new CrashPolicy();
  private readonly stderr = new LineRing();
  private disposed = false;
  private interpreter: string | undefined;

  constructor(private readonly ctx: Ctx) {
    ctx.pushExtCleanup(
      vscode.workspace.onDidChangeConfiguration((event) => {
        const affects = (setting: string): boolean => event.affectsConfiguration(setting);
        switch (settingsChange(affects)) {
          case "restart":
            ctx.log.info(`${restartSettingsChanged(affects).join(" and ")} changed; restarting the sidecar`);
            void this.restart();
            return;
          case "reload":
            void this.sendSettings();
            return;
          case "none":
            return;
        }
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        ctx.log.info("the workspace is trusted now; restarting to read its MCP server files");
        void this.restart();
      }),
    );
  }

  /**
   * Send the changed servers settings to the running sidecar, which re-loads its servers without a restart
   * (changed servers restart under their new identity and are asked about again). A client still starting sends
   * them once it runs; a sidecar not started yet gets them in `initialize`.
   */
  private async sendSettings(): Promise<void> {
    const client = this.client;
    if (client === undefined) {
      this.ctx.log.info("settings changed; the sidecar reads them when it starts");
      return;
    }
    this.ctx.log.info("settings changed; sending them to the sidecar, which re-loads its servers");
    try {
      await client.sendNotification(DidChangeConfigurationNotification.type, configurationParams(currentSettings()));
    } catch (error) {
      this.ctx.log.warn(
        `could not send the changed settings to the sidecar (${errorMessage(error)}); run “MCP: Restart Host Bridge” to apply them`,
      );
    }
  }

  /** The Python the sidecar runs with (known once it has been found); `host_bridge attach` runs with it too. */
  get python(): string | undefined {
    return this.interpreter;
  }

  /** The sidecar's process id while it runs. */
  get pid(): number | undefined {
    return this.client?.serverProcess?.pid;
  }

  /** Start the sidecar (finding Python, bootstrapping its environment on first use). */
  start(): Promise<void> {
    return this.queue.run(() => this.startNow());
  }

  /** Restart by hand: forgets past crashes. Serialized; a burst of calls gives one restart. */
  restart(): Promise<void> {
    return this.queue.restart(async () => {
      this.crashes.reset();
      await this.stopNow();
      await this.startNow();
    });
  }

  private async startNow(): Promise<void> {
    if (this.disposed) {
      return;
    }
    this.ctx.setState({ kind: "starting" });
    this.stderr.drain();
    let python: string;
    try {
      python = await sidecarPython(this.ctx);
    } catch (error) {
      this.fail(errorMessage(error));
      return;
    }
    if (this.disposed) {
      return;
    }
    this.interpreter = python;
    const client = this.createClient(python);
    this.client = client;
    this.everRunning = false;
    this.ctx.attach(client);
    this.ctx.pushClientCleanup(
      client.onDidChangeState(({ newState }) => {
        if (this.client !== client) {
          return;
        }
        if (newState === State.Running) {
          this.everRunning = true;
          this.ctx.setState({ kind: "running" });
        } else if (newState === State.Starting) {
          this.ctx.setState({ kind: "starting" });
        }
      }),
    );
    try {
      await client.start();
    } catch (error) {
      if (this.client === client) {
        this.dumpStderr();
        this.fail(`the sidecar did not start: ${errorMessage(error)}`);
      }
    }
  }

  private createClient(python: string): LanguageClient {
    const options: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.ctx.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(this.ctx),
      errorHandler: {
        error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue, handled: true }),
        closed: (): CloseHandlerResult => this.closed(),
      },
      stdioOptions: {
        stdout: () => undefined,
        stderr: (input) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on("line", (line) => {
            this.stderr.push(line);
            this.ctx.log.trace(`[sidecar] ${line}`);
          });
        },
      },
    };
    const storage = this.ctx.extension.globalStorageUri.fsPath;
    const serverOptions = async () => {
      await fs.mkdir(storage, { recursive: true });
      const child = spawn(python, ["-m", "host_bridge", "serve"], {
        cwd: storage,
        env: { ...process.env, PYTHONUNBUFFERED: "1", PYTHONIOENCODING: "utf-8" },
        stdio: "pipe",
        windowsHide: true,
      });
      // A failed spawn must fail the start with its reason, not surface later as a closed stream.
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", (error) => reject(new Error(`could not run ${python}: ${error.message}`)));
      });
      this.child = child;
      return child;
    };
    const client = new LanguageClient("hostBridge", "MCP Host Bridge", serverOptions, options);
    client.registerFeature(consentUiFeature);
    return client;
  }

  /**
   * The connection closed without a stop: a crash. Restart unless it crashed too often, or it never got as
   * far as running (then the failed start reports it, and restarting would only repeat the failure).
   */
  private closed(): CloseHandlerResult {
    this.dumpStderr();
    if (!this.everRunning) {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    if (this.crashes.crashed(Date.now())) {
      this.ctx.log.warn(`the sidecar stopped unexpectedly; restarting it (${this.crashes.recent} of ${MAX_CRASHES})`);
      this.ctx.setState({ kind: "starting", detail: "restarting after a crash" });
      return { action: CloseAction.Restart, handled: true };
    }
    this.fail(`the sidecar crashed ${MAX_CRASHES} times in 3 minutes, so it is stopped.`);
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /** What the sidecar last wrote to stderr, shown in the log after it went away. */
  private dumpStderr(): void {
    for (const line of this.stderr.drain()) {
      this.ctx.log.error(`[sidecar] ${line}`);
    }
  }

  private fail(reason: string): void {
    this.ctx.log.error(reason);
    this.ctx.setState({ kind: "failed", reason });
    void vscode.window.showErrorMessage(`MCP Host Bridge: ${reason}`, "Restart", "Show Log").then((choice) => {
      if (choice === "Restart") {
        void this.restart();
      } else if (choice === "Show Log") {
        this.ctx.log.show();
      }
    });
  }

  private async stopNow(): Promise<void> {
    const client = this.client;
    const child = this.child;
    this.client = undefined;
    this.child = undefined;
    if (client === undefined) {
      return;
    }
    this.ctx.detach();
    this.ctx.setState({ kind: "stopped" });
    try {
      await client.stop(5_000);
    } catch (error) {
      // A client between a crash and its restart cannot be stopped; end its process so nobody owns an orphan.
      this.ctx.log.warn(`stopping the sidecar: ${errorMessage(error)}`);
    }
    await client.dispose().catch(() => undefined);
    this.ctx.endClientLifetime();
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill();
    }
  }

  /** Stop the sidecar for good (its MCP servers stop with it): the extension is deactivating. */
  async stop(): Promise<void> {
    this.disposed = true;
    await this.queue.run(() => this.stopNow());
  }

  /** Stop the sidecar; the settings and trust listeners end with the extension's lifetime ({@link Ctx}). */
  dispose(): void {
    void this.stop();
  }
}
