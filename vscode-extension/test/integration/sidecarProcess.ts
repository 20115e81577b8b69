// The real sidecar (`python -m host_bridge serve`, or a platform package's launcher) driven over stdio by vscode-jsonrpc, as the extension's
// LanguageClient would drive it, recording everything it sends so tests can wait on it.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import {
  type MessageConnection,
  ProgressType,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from "vscode-jsonrpc/node";
import type { SidecarCommand } from "../../src/sidecar/bootstrap";
import * as protocol from "../../src/protocol";
import { alive, childrenOf } from "./processes";
import { type Wake, waitFor, withTimeout } from "./waitFor";

/** One `window/logMessage`. */
export interface LogMessage {
  type: number;
  message: string;
}

/** The LSP `$/progress` values of work-done progress (only the fields the tests read). */
export interface WorkDoneProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

/** How the test editor answers `hostBridge/askConsent`. */
export type ConsentAnswer = (params: protocol.AskConsentParams) => protocol.AskConsentResult;

/** How a sidecar process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Every message the sidecar sent, in arrival order per kind. */
export class Received {
  readonly serverChanged: protocol.ServerStatus[] = [];
  readonly resourcesChanged: protocol.ServerNotification[] = [];
  readonly resourceUpdated: protocol.ResourceUpdatedNotification[] = [];
  readonly asks: protocol.AskConsentParams[] = [];
  readonly logs: LogMessage[] = [];
  /** Requests and notifications the test editor does not implement (method names). */
  readonly unexpected: string[] = [];

  /** The latest `serverChanged` of `server`. */
  latest(server: string): protocol.ServerStatus | undefined {
    return this.serverChanged.filter((status) => status.id === server).at(-1);
  }

  /** Every state `server` reported, oldest first. */
  states(server: string): protocol.ServerState[] {
    return this.serverChanged.filter((status) => status.id === server).map((status) => status.state);
  }

  /** Log lines that start with `prefix`. */
  logLines(prefix: string): string[] {
    return this.logs.map((log) => log.message).filter((message) => message.startsWith(prefix));
  }
}

/** Options of `python -m host_bridge serve` plus the test editor's behaviour. */
export interface StartOptions {
  /** The interpreter that has host_bridge installed. */
  python: string;
  /** How to run host_bridge instead of `python -m host_bridge` (a platform package's launcher). */
  command?: SidecarCommand;
  /** The sidecar's environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the sidecar. */
  cwd: string;
  /** Answers consent prompts. */
  answerConsent: ConsentAnswer;
}

/** A running sidecar and the connection to it. */
export class SidecarProcess {
  readonly received = new Received();
  /** Everything the sidecar wrote to stderr. */
  stderr = "";
  /** Resolves when the process ended. */
  readonly exited: Promise<Exit>;
  /** `$/progress` values per work-done token. */
  readonly progress = new Map<string | number, WorkDoneProgressValue[]>();

  private readonly changed = new EventEmitter();
  private exit: Exit | undefined;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly connection: MessageConnection,
    answerConsent: ConsentAnswer,
  ) {
    this.changed.setMaxListeners(100);
    this.exited = new Promise<Exit>((resolve) => {
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        this.poke();
        resolve(this.exit);
      });
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    const received = this.received;
    connection.onNotification(protocol.serverChanged, (status) => this.record(received.serverChanged, status));
    connection.onNotification(protocol.resourcesChanged, (params) => this.record(received.resourcesChanged, params));
    connection.onNotification(protocol.resourceUpdated, (params) => this.record(received.resourceUpdated, params));
    connection.onNotification("window/logMessage", (params: LogMessage) => this.record(received.logs, params));
    connection.onRequest(protocol.askConsent, (params) => {
      this.record(received.asks, params);
      return answerConsent(params);
    });
    connection.onNotification((method) => this.record(received.unexpected, method));
    connection.onRequest((method) => {
      this.record(received.unexpected, method);
      return null;
    });
    // The connection rejects pending requests itself when the stream closes; nothing to do here.
    connection.onError(() => undefined);
    connection.listen();
  }

  /** Starts `python -m host_bridge serve` (or `options.command serve`); the caller sends `initialize`. */
  static start(options: StartOptions): SidecarProcess {
    const command = options.command ?? { command: options.python, args: ["-m", "host_bridge"] };
    const child = spawn(command.command, [...command.args, "serve"], {
      cwd: options.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...(options.env ?? process.env), PYTHONUNBUFFERED: "1" },
    });
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    return new SidecarProcess(child, connection, options.answerConsent);
  }

  /** Resolves with the first truthy `check()`, re-checked on every message from the sidecar. */
  until<T>(check: () => T | undefined | null | false, timeoutMs: number, what: string | (() => string)): Promise<T> {
    const wake: Wake = (listener) => {
      this.changed.on("message", listener);
      return () => this.changed.off("message", listener);
    };
    return waitFor(check, timeoutMs, what, wake);
  }

  /** Collects `$/progress` under `token` into `progress`. */
  watchProgress(token: string): void {
    const values: WorkDoneProgressValue[] = [];
    this.progress.set(token, values);
    this.connection.onProgress(new ProgressType<WorkDoneProgressValue>(), token, (value) => this.record(values, value));
  }

  /**
   * Ends the process if it still runs: closes its input (the sidecar then stops its MCP servers and exits),
   * and after `timeoutMs` kills it and the MCP servers it started, so nothing outlives the test run.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (this.exit === undefined) {
      const pid = this.child.pid;
      const servers = pid === undefined ? [] : childrenOf(pid);
      this.child.stdin.end();
      try {
        await withTimeout(this.exited, timeoutMs, "the sidecar to exit at the end of its input");
      } catch {
        this.child.kill("SIGKILL");
        for (const server of servers.filter(alive)) process.kill(server, "SIGKILL");
      }
    }
    this.connection.dispose();
  }

  /** Sends `shutdown` and `exit`; resolves with how the process ended. */
  async shutdown(timeoutMs: number): Promise<Exit> {
    await withTimeout(this.connection.sendRequest("shutdown"), timeoutMs, "the answer to shutdown");
    await this.connection.sendNotification("exit");
    return withTimeout(this.exited, timeoutMs, "the sidecar to exit after exit");
  }

  /** The last `lines` lines of stderr and of `window/logMessage`, for a failure report. */
  diagnostics(lines = 200): string {
    const stderr = this.stderr.split("\n").slice(-lines).join("\n");
    const logs = this.received.logs
      .slice(-lines)
      .map((log) => `[type ${log.type}] ${log.message}`)
      .join("\n");
    const exit = this.exit ? `exited with code ${this.exit.code}, signal ${this.exit.signal}` : "still running";
    return `sidecar ${exit}\n--- sidecar stderr ---\n${stderr}\n--- window/logMessage ---\n${logs}`;
  }

  private record<T>(list: T[], item: T): void {
    list.push(item);
    this.poke();
  }

  private poke(): void {
    this.changed.emit("message");
  }
}
