// Finds a Python ≥ 3.11 for the sidecar and returns the command that runs it, installing the bundled
// sidecar into a private environment on first use (with visible progress).
import * as vscode from "vscode";
import {
  BootstrapError,
  MIN_PYTHON,
  ensureEnvironment,
  findBundle,
  isSupported,
  probe,
  type PythonInfo,
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

async function candidates(): Promise<Candidate[]> {
  const found: Candidate[] = [];
  const setting = vscode.workspace.getConfiguration("hostBridge").get<string>("python", "").trim();
  if (setting !== "") {
    found.push({ command: setting, origin: "the hostBridge.python setting", explicit: true });
    return found;
  }
  // In Restricted Mode the Python extension may point into the workspace (.venv): never run that.
  const fromExtension = vscode.workspace.isTrusted ? await pythonExtensionInterpreter() : undefined;
  if (fromExtension !== undefined) {
    found.push({ command: fromExtension, origin: "the Python extension's selected interpreter", explicit: false });
  }
  for (const command of process.platform === "win32" ? ["py", "python"] : ["python3", "python"]) {
    found.push({ command, origin: `${command} on PATH`, explicit: false });
  }
  return found;
}

const WANT = `Python ${MIN_PYTHON.join(".")} or newer`;

/** Choose the interpreter: the first candidate that runs and is new enough. */
async function choose(log: vscode.LogOutputChannel): Promise<PythonInfo> {
  const tried: string[] = [];
  for (const candidate of await candidates()) {
    const info = await probe(candidate.command);
    if (info === undefined) {
      tried.push(`${candidate.command} (${candidate.origin}) could not be run`);
    } else if (!isSupported(info.version)) {
      tried.push(`${candidate.command} (${candidate.origin}) is Python ${info.version}`);
    } else {
      log.info(`using Python ${info.version} at ${info.executable} from ${candidate.origin}`);
      return info;
    }
    if (candidate.explicit) {
      break;
    }
  }
  throw new BootstrapError(
    `the sidecar needs ${WANT}: ${tried.join("; ")}. Install ${WANT} (python.org, or your package manager) and set "hostBridge.python" to its path, then run "MCP: Restart Host Bridge".`,
  );
}

/** The interpreter that runs `-m host_bridge serve`; may install the sidecar first. */
export async function sidecarPython(ctx: {
  extension: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
}): Promise<string> {
  const python = await choose(ctx.log);
  const declared = (ctx.extension.extension.packageJSON as { version?: unknown }).version;
  const version = typeof declared === "string" ? declared : "";
  if (python.sidecarVersion !== undefined && python.sidecarVersion === version) {
    ctx.log.info(`the interpreter already has host_bridge ${version}; using it directly`);
    return python.executable;
  }
  const bundle = await findBundle(vscode.Uri.joinPath(ctx.extension.extensionUri, "python").fsPath);
  const progress = new LazyProgress();
  try {
    return await ensureEnvironment({
      python,
      storageDir: ctx.extension.globalStorageUri.fsPath,
      bundle,
      reporter: { progress: (message) => progress.report(message), log: (line) => ctx.log.info(line) },
    });
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
