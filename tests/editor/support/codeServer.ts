// A throwaway code-server: its own user data (settings, logs, the extension's storage), the shared extensions
// folder the global setup installed the .vsix into, loopback only, on a port the system picks.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { CODE_SERVER, NODE24 } from "./paths";
import { type ProcessInfo, descendants, isRunning, processInfo } from "./processes";

const LISTENING = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+\/)/;

/** The extension's id (publisher.name) as VS Code names its folders. */
export const EXTENSION_ID = "host-bridge.host-bridge";

/** The arguments every code-server invocation shares. */
function baseArgs(userDataDir: string, extensionsDir: string): string[] {
  // An empty config file, so the user's ~/.config/code-server/config.yaml cannot change what runs.
  const config = path.join(userDataDir, "config.yaml");
  if (!existsSync(config)) {
    writeFileSync(config, "");
  }
  return [
    CODE_SERVER,
    "--config",
    config,
    "--user-data-dir",
    userDataDir,
    "--extensions-dir",
    extensionsDir,
    "--disable-telemetry",
    "--disable-update-check",
  ];
}

/** Install `vsix` into `extensionsDir` (done once per run by the global setup). */
export function installExtension(vsix: string, userDataDir: string, extensionsDir: string): void {
  mkdirSync(userDataDir, { recursive: true });
  const result = spawnSync(NODE24, [...baseArgs(userDataDir, extensionsDir), "--install-extension", vsix], {
    encoding: "utf8",
    timeout: 120_000,
  });
  if (result.status !== 0 || !/was successfully installed/.test(result.stdout)) {
    throw new Error(`code-server could not install ${vsix}:\n${result.stdout}\n${result.stderr}`);
  }
}

/** One running code-server. */
export class CodeServer {
  private constructor(
    private readonly process: ProcessInfo,
    /** Its base URL, e.g. `http://127.0.0.1:41234/`. */
    readonly url: string,
    /** Its user data folder (settings, logs, globalStorage). */
    readonly userDataDir: string,
    private readonly output: string[],
  ) {}

  /**
   * Start code-server and wait until it listens. `settings.user` are the user settings; `settings.machine` the
   * settings of the machine code-server runs on, where a remote window always reads machine-scoped settings
   * from (it ignored `hostBridge.python` in the user settings on a fresh profile's first start).
   * `userDataDir` must be a fresh folder; `extensionsDir` already holds the extension. `env` is the environment
   * of code-server and so of the extension host, the sidecar and the servers (default: this process's).
   */
  static async start(
    userDataDir: string,
    extensionsDir: string,
    settings: { readonly user: object; readonly machine: object },
    env: NodeJS.ProcessEnv = process.env,
  ): Promise<CodeServer> {
    for (const [folder, values] of [
      ["User", settings.user],
      ["Machine", settings.machine],
    ] as const) {
      mkdirSync(path.join(userDataDir, folder), { recursive: true });
      writeFileSync(path.join(userDataDir, folder, "settings.json"), JSON.stringify(values, null, 2));
    }
    const child = spawn(
      NODE24,
      [...baseArgs(userDataDir, extensionsDir), "--auth", "none", "--bind-addr", "127.0.0.1:0"],
      { stdio: ["ignore", "pipe", "pipe"], detached: true, env },
    );
    const output: string[] = [];
    let url: string | undefined;
    try {
      url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`code-server did not listen within 60 s:\n${output.join("")}`)), 60_000);
        const onData = (chunk: Buffer): void => {
          output.push(chunk.toString());
          const match = url === undefined ? LISTENING.exec(output.join("")) : null;
          if (match?.[1] !== undefined) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        };
        child.stdout?.on("data", onData);
        child.stderr?.on("data", onData);
        child.once("error", (error) => {
          clearTimeout(timer);
          reject(new Error(`could not start code-server: ${error.message}`));
        });
        child.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`code-server exited with ${code} before listening:\n${output.join("")}`));
        });
      });
    } catch (error) {
      if (child.pid !== undefined) {
        signalGroup(child.pid, "SIGKILL");
      }
      throw error;
    }
    child.removeAllListeners("exit");
    child.removeAllListeners("error");
    const info = child.pid === undefined ? undefined : processInfo(child.pid);
    if (info === undefined) {
      throw new Error(`code-server stopped right after it listened:\n${output.join("")}`);
    }
    return new CodeServer(info, url, userDataDir, output);
  }

  /** The URL that opens `workspaceFile` (a .code-workspace) or a folder. */
  urlFor(target: { workspace: string } | { folder: string }): string {
    const query = "workspace" in target ? `workspace=${encodeURIComponent(target.workspace)}` : `folder=${encodeURIComponent(target.folder)}`;
    return `${this.url}?${query}`;
  }

  /** The code-server process id. */
  get pid(): number {
    return this.process.pid;
  }

  /** The extension's global storage: the sidecar's consent store and audit log. */
  get storageDir(): string {
    return path.join(this.userDataDir, "User", "globalStorage", EXTENSION_ID);
  }

  /** The text of the extension's log ("MCP Host Bridge" output channel) over every window the run opened. */
  extensionLog(): string {
    const logs = path.join(this.userDataDir, "logs");
    if (!existsSync(logs)) {
      return "";
    }
    const files: string[] = [];
    for (const session of readdirSync(logs).sort()) {
      const sessionDir = path.join(logs, session);
      for (const host of safeReaddir(sessionDir).filter((name) => name.startsWith("exthost")).sort()) {
        const file = path.join(sessionDir, host, EXTENSION_ID, "MCP Host Bridge.log");
        if (existsSync(file)) {
          files.push(file);
        }
      }
    }
    return files.map((file) => readFileSync(file, "utf8")).join("");
  }

  /** What code-server printed, for failure reports. */
  get printed(): string {
    return this.output.join("");
  }

  /**
   * Stop code-server and everything it started: SIGTERM to its process group (the extension host then
   * stops the sidecar, which stops its MCP servers), then SIGKILL to whatever of its process tree remains.
   */
  async stop(): Promise<void> {
    const tree = [this.process, ...descendants(this.pid)];
    signalGroup(this.pid, "SIGTERM");
    const deadline = Date.now() + 10_000;
    while (tree.some(isRunning) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const info of tree.filter(isRunning)) {
      try {
        process.kill(info.pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 1) {
    throw new Error(`refusing to signal the process group of pid ${pid}`);
  }
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}
