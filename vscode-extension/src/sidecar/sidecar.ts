// Starts, restarts and stops the sidecar (`host_bridge serve`: `python -I -S <extension>/python/run_sidecar.py serve`
// from a platform package, `python -m host_bridge serve` otherwise) through vscode-languageclient.
// Restarts are serialized (at most one queued); after 5 crashes in 3 minutes it stays stopped and says so.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, promises as fs } from "node:fs";
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
import type { Ctx } from "../ctx";
import type { InitializationOptions } from "../protocol";
import type { SidecarCommand } from "./bootstrap";
import { type SidecarLaunch, likelyLaunch, sidecarCommand } from "./python";
import {
  type SidecarSettings,
  configurationParams,
  initializationOptionsFor,
  restartSettingsChanged,
  networkSetting,
  sandboxSetting,
  settingsChange,
  sidecarSettings,
} from "./settingsModel";
import { errorMessage } from "../text";

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
  const configuration = vscode.workspace.getConfiguration("hostBridge");
  const sandbox = sandboxSetting(configuration.inspect<unknown>("sandbox"));
  const network = networkSetting(configuration.inspect<unknown>("network"));
  return initializationOptionsFor(ctx.extension.globalStorageUri.fsPath, currentSettings(), sandbox, network);
}

/** Whether the chosen launch is the likely one the sidecar was started with: same interpreter, same arguments. */
function sameLaunch(chosen: SidecarLaunch, likely: SidecarLaunch | undefined): boolean {
  return (
    likely !== undefined &&
    chosen.probed === likely.probed &&
    chosen.command.args.length === likely.command.args.length &&
    chosen.command.args.every((arg, index) => arg === likely.command.args[index])
  );
}

/**
 * `child`, just spawned, once it runs; rejects with the reason when it could not be run, so that a failed spawn
 * fails the start with it rather than surfacing later as a closed stream.
 */
function spawned(child: ChildProcess, command: SidecarCommand): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    child.once("spawn", () => resolve(child));
    child.once("error", (error) => reject(new Error(`could not run ${command.command}: ${error.message}`)));
  });
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
  private launch: SidecarCommand | undefined;
  /** When the current client's process was spawned, until it answers `initialize` (for the log). */
  private spawnedAt: number | undefined;

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

  /** How the sidecar is run (known once its Python has been found); `host_bridge attach` runs the same way. */
  get command(): SidecarCommand | undefined {
    return this.launch;
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
    // A platform package's sidecar starts at once with the interpreter it most likely gets, and imports while that
    // interpreter is probed (each step waits for an extension host that is busy starting other extensions); it is
    // kept when the probe chooses the same launch, else stopped.
    const likely = await likelyLaunch(this.ctx).catch(() => undefined);
    const early = likely === undefined ? undefined : this.spawnEarly(likely.command);
    let chosen: SidecarLaunch;
    try {
      chosen = await sidecarCommand(this.ctx);
    } catch (error) {
      early?.kill();
      this.fail(errorMessage(error));
      return;
    }
    const adopted = early !== undefined && sameLaunch(chosen, likely) ? early : undefined;
    if (early !== undefined && adopted === undefined) {
      this.ctx.log.info("the sidecar started meanwhile is not the one chosen; stopping it");
      early.kill();
    }
    if (this.disposed) {
      adopted?.kill();
      return;
    }
    const command = chosen.command;
    this.launch = command;
    const client = this.createClient(command, adopted);
    this.client = client;
    this.everRunning = false;
    this.ctx.attach(client);
    this.ctx.pushClientCleanup(
      client.onDidChangeState(({ newState }) => {
        if (this.client !== client) {
          return;
        }
        if (newState === State.Running) {
          if (this.spawnedAt !== undefined) {
            this.ctx.log.info(
              `the sidecar runs (initialize answered ${Date.now() - this.spawnedAt} ms after it was started)`,
            );
            this.spawnedAt = undefined;
          }
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

  /** Start `command serve` before its interpreter was checked; a failure shows when the client adopts it. */
  private spawnEarly(command: SidecarCommand): ChildProcess | undefined {
    try {
      mkdirSync(this.ctx.extension.globalStorageUri.fsPath, { recursive: true });
      const child = this.spawnProcess(command);
      // Not adopted then (no pid): the usual start runs it again and reports why it cannot.
      child.once("error", (error) =>
        this.ctx.log.info(`could not start the sidecar before its interpreter was checked: ${error.message}`),
      );
      return child;
    } catch (error) {
      this.ctx.log.info(`could not start the sidecar before its interpreter was checked: ${errorMessage(error)}`);
      return undefined;
    }
  }

  /** Spawn `command serve` in the extension's storage folder. */
  private spawnProcess(command: SidecarCommand): ChildProcess {
    const args = [...command.args, "serve"];
    this.ctx.log.info(`starting the sidecar: ${[command.command, ...args].join(" ")}`);
    this.spawnedAt = Date.now();
    return spawn(command.command, args, {
      cwd: this.ctx.extension.globalStorageUri.fsPath,
      // `-I` (a platform package) ignores these; its launcher sets UTF-8 stdio itself.
      env: { ...process.env, PYTHONUNBUFFERED: "1", PYTHONIOENCODING: "utf-8" },
      stdio: "pipe",
      windowsHide: true,
    });
  }

  /** Spawn `command serve` in the extension's storage folder; rejects with the reason when it cannot run. */
  private async spawnSidecar(command: SidecarCommand): Promise<ChildProcess> {
    return spawned(this.spawnProcess(command), command);
  }

  /** The client of the sidecar run as `command`; its first process is `early` when that was started already. */
  private createClient(command: SidecarCommand, early?: ChildProcess): LanguageClient {
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
    let first = early;
    // Called again for each restart after a crash: those spawn anew.
    const serverOptions = async () => {
      const started = first;
      first = undefined;
      let child: ChildProcess;
      if (started?.pid !== undefined && started.exitCode === null && started.signalCode === null) {
        child = started;
      } else {
        await fs.mkdir(storage, { recursive: true });
        child = await this.spawnSidecar(command);
      }
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
