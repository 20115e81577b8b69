// Finds a Python ≥ 3.11 for the sidecar and returns the command that runs it: from the platform package's
// libraries, laid out ready to import (nothing to set up), or, for the universal package, from a private
// environment installed on first use (with visible progress).
import { existsSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  BootstrapError,
  MIN_PYTHON,
  ensureEnvironment,
  findBundle,
  isSupported,
  laidOutArgs,
  laidOutCommand,
  moduleCommand,
  probe,
  type PythonInfo,
  type SidecarCommand,
} from "./bootstrap";

/** Where a candidate interpreter came from, for messages. */
interface Candidate {
  command: string;
  origin: string;
  explicit: boolean;
}

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?: (resource?: vscode.Uri) => { path: string } | undefined;
  };
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const found = api?.environments?.getActiveEnvironmentPath?.(folder)?.path;
    return found !== undefined && found !== "" && found !== "python" ? found : undefined;
  } catch {
    return undefined;
  }
}

function pythonSetting(): string {
  return vscode.workspace.getConfiguration("hostBridge").get<string>("python", "").trim();
}

/** The interpreters tried after the setting and the Python extension's: `python3`, `python` (`py` on Windows). */
const ON_PATH = process.platform === "win32" ? ["py", "python"] : ["python3", "python"];

async function candidates(): Promise<Candidate[]> {
  const found: Candidate[] = [];
  const setting = pythonSetting();
  if (setting !== "") {
    found.push({ command: setting, origin: "the hostBridge.python setting", explicit: true });
    return found;
  }
  // In Restricted Mode the Python extension may point into the workspace (.venv): never run that.
  const fromExtension = vscode.workspace.isTrusted ? await pythonExtensionInterpreter() : undefined;
  if (fromExtension !== undefined) {
    found.push({ command: fromExtension, origin: "the Python extension's selected interpreter", explicit: false });
  }
  for (const command of ON_PATH) {
    found.push({ command, origin: `${command} on PATH`, explicit: false });
  }
  return found;
}

const WANT = `Python ${MIN_PYTHON.join(".")} or newer`;

/** Choose the interpreter: the first candidate that runs and is new enough; also the command it was probed as. */
async function choose(log: vscode.LogOutputChannel): Promise<{ python: PythonInfo; probed: string }> {
  const tried: string[] = [];
  for (const candidate of await candidates()) {
    const info = await probe(candidate.command);
    if (info === undefined) {
      tried.push(`${candidate.command} (${candidate.origin}) could not be run`);
    } else if (!isSupported(info.version)) {
      tried.push(`${candidate.command} (${candidate.origin}) is Python ${info.version}`);
    } else {
      log.info(`using Python ${info.version} at ${info.executable} from ${candidate.origin}`);
      return { python: info, probed: candidate.command };
    }
    if (candidate.explicit) {
      break;
    }
  }
  throw new BootstrapError(
    `the sidecar needs ${WANT}: ${tried.join("; ")}. Install ${WANT} (python.org, or your package manager) and set "hostBridge.python" to its path, then run "MCP: Restart Host Bridge".`,
  );
}

/** How the sidecar runs, and the candidate interpreter command (as probed: `python3`) it was chosen as. */
export interface SidecarLaunch {
  command: SidecarCommand;
  probed: string;
}

/**
 * The launch a platform package most likely gets, known before any interpreter has run: its launcher with the
 * first candidate, when that is known at once — the hostBridge.python setting (unless it names a virtual
 * environment's interpreter, which may have host_bridge itself), or `python3` where no Python extension can name
 * another. Undefined for the universal package. The sidecar starts with it while the interpreter is probed.
 */
export async function likelyLaunch(ctx: { extension: vscode.ExtensionContext }): Promise<SidecarLaunch | undefined> {
  if (process.platform === "win32") {
    // `py` would run the sidecar as its child: stopping the process the client holds would leave it running.
    return undefined;
  }
  const setting = pythonSetting();
  const fromExtension = vscode.workspace.isTrusted && vscode.extensions.getExtension("ms-python.python") !== undefined;
  const first = setting !== "" ? setting : fromExtension ? undefined : ON_PATH[0];
  if (first === undefined || (path.isAbsolute(first) && existsSync(path.join(first, "..", "..", "pyvenv.cfg")))) {
    return undefined;
  }
  const bundle = await findBundle(vscode.Uri.joinPath(ctx.extension.extensionUri, "python").fsPath).catch(
    () => undefined,
  );
  return bundle?.kind === "laidOut" ? { command: laidOutArgs(first, bundle.launcher), probed: first } : undefined;
}

/**
 * How to run host_bridge's command line (`serve`, and `attach` for VS Code's MCP support): the interpreter's own
 * host_bridge when it has this version, else the platform package's libraries, else (universal package) a private
 * environment, installed first if needed.
 */
export async function sidecarCommand(ctx: {
  extension: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
}): Promise<SidecarLaunch> {
  const { python, probed } = await choose(ctx.log);
  const declared = (ctx.extension.extension.packageJSON as { version?: unknown }).version;
  const version = typeof declared === "string" ? declared : "";
  if (python.sidecarVersion !== undefined && python.sidecarVersion === version) {
    ctx.log.info(`the interpreter already has host_bridge ${version}; using it directly`);
    return { command: moduleCommand(python.executable), probed };
  }
  const bundle = await findBundle(vscode.Uri.joinPath(ctx.extension.extensionUri, "python").fsPath);
  if (bundle.kind === "laidOut") {
    const command = laidOutCommand(bundle, python);
    ctx.log.info(`running the sidecar from the package's libraries for ${bundle.target}; nothing to install`);
    return { command, probed };
  }
  const progress = new LazyProgress();
  try {
    const environment = await ensureEnvironment({
      python,
      storageDir: ctx.extension.globalStorageUri.fsPath,
      bundle,
      reporter: { progress: (message) => progress.report(message), log: (line) => ctx.log.info(line) },
    });
    return { command: moduleCommand(environment), probed };
  } finally {
    progress.done();
  }
}

/** A progress notification that appears only once there is something to report (first start only). */
class LazyProgress {
  private progress: vscode.Progress<{ message?: string }> | undefined;
  private finish: (() => void) | undefined;
  private closed = false;

  report(message: string): void {
    const text = `${message} (first start only)…`;
    if (this.progress !== undefined) {
      this.progress.report({ message: text });
      return;
    }
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "MCP Host Bridge", cancellable: false },
      (progress) => {
        this.progress = progress;
        progress.report({ message: text });
        return new Promise<void>((resolve) => {
          this.finish = resolve;
          if (this.closed) {
            resolve();
          }
        });
      },
    );
  }

  done(): void {
    this.closed = true;
    this.finish?.();
  }
}
