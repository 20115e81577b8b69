// Pure Node (no `vscode`): checks a Python interpreter and installs the sidecar into a private virtual
// environment built from the wheel bundled in the .vsix. Used by python.ts and by the integration tests.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";

/** The oldest Python the sidecar runs on. */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** What {@link probe} learnt about an interpreter. */
export interface PythonInfo {
  /** The interpreter's own path (`sys.executable`). */
  executable: string;
  /** `major.minor.micro`. */
  version: string;
  /** `host_bridge.__version__` when the interpreter can import it. */
  sidecarVersion?: string;
  /** Whether the `venv` module with `ensurepip` is available (Debian ships it separately). */
  canCreateVenv: boolean;
}

/** A failure a person can act on; `message` names what went wrong and what to do. */
export class BootstrapError extends Error {}

/** Receives progress sentences and log lines. */
export interface BootstrapReporter {
  progress(message: string): void;
  log(line: string): void;
}

const PROBE = [
  "import json, sys, importlib.util",
  "info = {'executable': sys.executable, 'version': '.'.join(map(str, sys.version_info[:3]))}",
  "info['canCreateVenv'] = all(importlib.util.find_spec(m) is not None for m in ('venv', 'ensurepip'))",
  "try:",
  "    import host_bridge",
  "    info['sidecarVersion'] = host_bridge.__version__",
  "except Exception:",
  "    pass",
  "print(json.dumps(info))",
].join("\n");

interface RunResult {
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], timeoutMs: number, env?: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: env ?? process.env, windowsHide: true },
      (error, stdout, stderr) => {
        if (error) {
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an Error, typed as an Omit<> of one
          reject(Object.assign(error, { stdout, stderr }));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
  });
}

/** Whether `version` (`3.12.1`) is at least {@link MIN_PYTHON}. */
export function isSupported(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map((part) => Number.parseInt(part, 10));
  return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

/** Ask `python` about itself; undefined when it cannot be run. */
export async function probe(python: string): Promise<PythonInfo | undefined> {
  try {
    const { stdout } = await run(python, ["-I", "-c", PROBE], 30_000);
    const parsed: unknown = JSON.parse(stdout.trim().split("\n").pop() ?? "");
    if (typeof parsed !== "object" || parsed === null) {
      return undefined;
    }
    const info = parsed as Record<string, unknown>;
    if (typeof info.executable !== "string" || typeof info.version !== "string") {
      return undefined;
    }
    return {
      executable: info.executable,
      version: info.version,
      sidecarVersion: typeof info.sidecarVersion === "string" ? info.sidecarVersion : undefined,
      canCreateVenv: info.canCreateVenv === true,
    };
  } catch {
    return undefined;
  }
}

/** The wheel and constraints shipped in the .vsix (`python/`). */
export interface Bundle {
  wheel: string;
  constraints: string;
}

/** Find the bundled wheel under `bundleDir`; throws when the package is incomplete. */
export async function findBundle(bundleDir: string): Promise<Bundle> {
  let names: string[];
  try {
    names = await fs.readdir(bundleDir);
  } catch {
    throw new BootstrapError(
      `The extension package has no sidecar bundle (${bundleDir} is missing); reinstall the extension.`,
    );
  }
  const wheels = names.filter((name) => /^host_bridge-.*\.whl$/.test(name)).sort();
  const wheel = wheels.at(-1);
  if (wheel === undefined || !names.includes("constraints.txt")) {
    throw new BootstrapError(
      `The extension package's sidecar bundle in ${bundleDir} is incomplete (a host_bridge wheel and constraints.txt are needed); reinstall the extension.`,
    );
  }
  return { wheel: path.join(bundleDir, wheel), constraints: path.join(bundleDir, "constraints.txt") };
}

/** The interpreter inside a virtual environment. */
export function venvPython(venv: string, platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? path.join(venv, "Scripts", "python.exe") : path.join(venv, "bin", "python");
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

function lastLines(text: string, count = 8): string {
  return text.trim().split(/\r?\n/).slice(-count).join("\n");
}

/**
 * Make sure a private environment with the bundled sidecar exists under `storageDir` and return its
 * interpreter. The environment is keyed by the bundle's content, built in a temporary directory and
 * renamed into place when complete, so a crash or a second window never leaves a half-installed one.
 */
export async function ensureEnvironment(options: {
  python: PythonInfo;
  storageDir: string;
  bundle: Bundle;
  reporter: BootstrapReporter;
  pipArgs?: string[];
}): Promise<string> {
  const { python, storageDir, bundle, reporter } = options;
  const hash = createHash("sha256");
  hash.update(await fs.readFile(bundle.wheel));
  hash.update(await fs.readFile(bundle.constraints));
  hash.update(python.executable);
  const key = hash.digest("hex").slice(0, 16);
  const root = path.join(storageDir, "sidecar-env");
  const target = path.join(root, key);
  const ready = path.join(target, ".ready");
  if (await exists(ready)) {
    const now = new Date();
    await fs.utimes(ready, now, now).catch(() => undefined);
    return venvPython(target);
  }
  if (!python.canCreateVenv) {
    throw new BootstrapError(
      `Python ${python.version} at ${python.executable} cannot create virtual environments (the venv/ensurepip modules are missing). Install them (on Debian or Ubuntu: sudo apt install python3-venv) or set hostBridge.python to another interpreter.`,
    );
  }
  await fs.mkdir(root, { recursive: true });
  const staging = `${target}.tmp-${process.pid}-${Date.now()}`;
  try {
    reporter.progress("creating a private Python environment");
    await step(reporter, python.executable, ["-m", "venv", staging], 300_000, "create the virtual environment");
    reporter.progress("installing the sidecar and its dependencies");
    await step(
      reporter,
      venvPython(staging),
      [
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--constraint",
        bundle.constraints,
        ...(options.pipArgs ?? []),
        bundle.wheel,
      ],
      900_000,
      "install the sidecar's Python packages (pip needs access to PyPI or your configured package index)",
    );
    await fs.writeFile(path.join(staging, ".ready"), new Date().toISOString());
    try {
      await fs.rename(staging, target);
    } catch (error) {
      // Another window finished first: use its environment.
      if (!(await exists(path.join(target, ".ready")))) {
        throw error;
      }
    }
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
  await removeOthers(root, key, reporter);
  return venvPython(target);
}

async function step(
  reporter: BootstrapReporter,
  command: string,
  args: string[],
  timeoutMs: number,
  what: string,
): Promise<void> {
  reporter.log(`$ ${command} ${args.join(" ")}`);
  try {
    const { stdout, stderr } = await run(command, args, timeoutMs, { ...process.env, PIP_NO_INPUT: "1" });
    for (const line of `${stdout}\n${stderr}`.split(/\r?\n/)) {
      if (line.trim()) {
        reporter.log(line);
      }
    }
  } catch (error) {
    const details = error as { stdout?: string; stderr?: string; killed?: boolean; code?: unknown };
    const output = `${details.stdout ?? ""}\n${details.stderr ?? ""}`;
    for (const line of output.split(/\r?\n/)) {
      if (line.trim()) {
        reporter.log(line);
      }
    }
    const why = details.killed ? "it timed out" : `it exited with ${String(details.code)}`;
    throw new BootstrapError(
      `Could not ${what}: ${why}.\n${lastLines(output)}\nFix the cause and run "MCP: Restart Host Bridge", or set hostBridge.python to an interpreter that has host-bridge installed.`,
    );
  }
}

/** Environments unused for this long are removed (other windows may still use recent ones). */
const STALE_MS = 7 * 24 * 60 * 60 * 1000;

async function removeOthers(root: string, keep: string, reporter: BootstrapReporter): Promise<void> {
  const now = Date.now();
  for (const name of await fs.readdir(root)) {
    const marker = path.join(root, name, name.includes(".tmp-") ? "." : ".ready");
    const used = await fs.stat(marker).then(
      (stat) => stat.mtimeMs,
      () => 0,
    );
    if (name !== keep && now - used > STALE_MS) {
      await fs.rm(path.join(root, name), { recursive: true, force: true }).catch((error: unknown) => {
        reporter.log(`could not remove the old environment ${name}: ${String(error)}`);
      });
    }
  }
}
