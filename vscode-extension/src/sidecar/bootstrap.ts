// Pure Node (no `vscode`): checks a Python interpreter and says how to run the sidecar with it, from the bundle in
// the .vsix (`python/`). A platform .vsix (linux-x64, darwin-arm64, …) carries the sidecar and its dependencies laid
// out ready to import for CPython 3.11–3.14 (`python/lib`, see scripts/bundle_python.py): the interpreter runs them
// as they are, isolated (`-I -S`), with nothing to set up. The universal .vsix installs the sidecar into a private
// virtual environment, downloading the dependencies from the package index, bounded in time. Used by python.ts and
// by the integration tests.
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The oldest Python the sidecar runs on. */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** What {@link probe} learnt about an interpreter. */
export interface PythonInfo {
  /** The interpreter's own path (`sys.executable`). */
  executable: string;
  /** `major.minor.micro`. */
  version: string;
  /** `sys.implementation.name`: `cpython`, `pypy`… */
  implementation: string;
  /** `host_bridge.__version__` when the interpreter can import it. */
  sidecarVersion?: string;
  /** Whether the `venv` module is available (the environment gets pip from the bundle, not from ensurepip). */
  canCreateVenv: boolean;
}

/** A failure a person can act on; `message` names what went wrong and what to do, short enough for a toast. */
export class BootstrapError extends Error {}

/** Receives progress sentences and log lines. */
export interface BootstrapReporter {
  progress(message: string): void;
  log(line: string): void;
}

const PROBE = [
  "import json, sys, importlib.util",
  "info = {'executable': sys.executable, 'version': '.'.join(map(str, sys.version_info[:3])), 'implementation': sys.implementation.name}",
  "info['canCreateVenv'] = importlib.util.find_spec('venv') is not None",
  "try:",
  "    import host_bridge",
  "    info['sidecarVersion'] = host_bridge.__version__",
  "except Exception:",
  "    pass",
  "print(json.dumps(info))",
].join("\n");

function capture(command: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, windowsHide: true }, (error, stdout) => {
      if (error) {
        reject(new Error(error.message));
      } else {
        resolve(stdout);
      }
    });
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
    const stdout = await capture(python, ["-I", "-c", PROBE], 30_000);
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
      implementation: typeof info.implementation === "string" ? info.implementation : "",
      sidecarVersion: typeof info.sidecarVersion === "string" ? info.sidecarVersion : undefined,
      canCreateVenv: info.canCreateVenv === true,
    };
  } catch {
    return undefined;
  }
}

/** How to run host_bridge's command line: `command` and `args`, then the subcommand (`serve`, `attach …`). */
export interface SidecarCommand {
  command: string;
  args: string[];
}

/** `python -m host_bridge`: an interpreter that has host_bridge installed (its own, or a private environment's). */
export function moduleCommand(python: string): SidecarCommand {
  return { command: python, args: ["-m", "host_bridge"] };
}

/**
 * A platform package's bundle: the sidecar and its dependencies laid out ready to import for each Python of
 * `pythons` (`python/lib/common` and `python/lib/cp3XY`), run through `launcher` (`python/run_sidecar.py`).
 */
export interface LaidOutBundle {
  kind: "laidOut";
  /** The vsce target (`linux-x64`) the libraries are for. */
  target: string;
  /** The Python versions (`3.12`) `lib/` holds everything for. */
  pythons: string[];
  /** The launcher script: `python -I -S <launcher> serve`. */
  launcher: string;
}

/** The universal package's bundle: what a private environment is built from, with the package index. */
export interface PipBundle {
  kind: "pip";
  target: string;
  /** The sidecar's wheel. */
  wheel: string;
  /** Every runtime dependency pinned to the tested version. */
  constraints: string;
  /** `python/wheels`: pip's wheel. */
  wheelhouse: string;
  /** pip's wheel, which both runs the install and is installed (the environment is made without ensurepip). */
  pip: string;
  /** bundle.json's text: part of the environment's key. */
  manifest: string;
}

/** The sidecar bundle shipped in the .vsix (`python/`, written by scripts/bundle_python.py). */
export type Bundle = LaidOutBundle | PipBundle;

const UNIVERSAL = "universal";

/** Find the bundle under `bundleDir`; throws when the package is incomplete. */
export async function findBundle(bundleDir: string): Promise<Bundle> {
  let names: string[];
  try {
    names = await fs.readdir(bundleDir);
  } catch {
    throw new BootstrapError(
      `The extension package has no sidecar bundle (${bundleDir} is missing); reinstall the extension.`,
    );
  }
  const incomplete = (what: string): BootstrapError =>
    new BootstrapError(
      `The extension package's sidecar bundle in ${bundleDir} is incomplete (${what}); reinstall the extension.`,
    );
  if (!names.includes("bundle.json")) {
    throw incomplete("bundle.json is missing");
  }
  const manifest = await fs.readFile(path.join(bundleDir, "bundle.json"), "utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(manifest);
  } catch {
    throw incomplete("bundle.json is not JSON");
  }
  const fields = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const { target, pythons, pip, launcher } = fields;
  if (
    typeof target !== "string" ||
    !Array.isArray(pythons) ||
    !pythons.every((item): item is string => typeof item === "string")
  ) {
    throw incomplete("bundle.json needs target and pythons");
  }
  if (target !== UNIVERSAL) {
    if (typeof launcher !== "string" || !names.includes(launcher) || !names.includes("lib")) {
      throw incomplete("a platform package needs the launcher bundle.json names and lib/");
    }
    return { kind: "laidOut", target, pythons, launcher: path.join(bundleDir, launcher) };
  }
  const wheel = names
    .filter((name) => /^host_bridge-.*\.whl$/.test(name))
    .sort()
    .at(-1);
  if (wheel === undefined || !names.includes("constraints.txt") || typeof pip !== "string") {
    throw incomplete("a host_bridge wheel, constraints.txt and pip in bundle.json are needed");
  }
  const wheelhouse = path.join(bundleDir, "wheels");
  if (!(await exists(path.join(wheelhouse, pip)))) {
    throw incomplete(`wheels/${pip} is missing`);
  }
  return {
    kind: "pip",
    target,
    wheel: path.join(bundleDir, wheel),
    constraints: path.join(bundleDir, "constraints.txt"),
    wheelhouse,
    pip: path.join(wheelhouse, pip),
    manifest,
  };
}

/** Whether the laid-out bundle holds the libraries of `python` (CPython `3.12.4`): it then runs with nothing to set up. */
export function carries(bundle: LaidOutBundle, python: Pick<PythonInfo, "version" | "implementation">): boolean {
  const [major, minor] = python.version.split(".");
  return python.implementation === "cpython" && bundle.pythons.includes(`${major}.${minor}`);
}

/**
 * How `python` runs the sidecar from the laid-out bundle: isolated (`-I`: no `PYTHON*` variables, no user
 * site-packages; `-S`: no site-packages of the interpreter either), so that only the standard library and the
 * package's own libraries are importable. A short {@link BootstrapError} when the bundle has none for it.
 */
export function laidOutCommand(bundle: LaidOutBundle, python: PythonInfo): SidecarCommand {
  if (!carries(bundle, python)) {
    const which = python.implementation === "cpython" ? "Python" : python.implementation;
    throw new BootstrapError(
      `this package carries the sidecar for CPython ${bundle.pythons.join(", ")} on ${bundle.target}, and ${python.executable} is ${which} ${python.version}. Set hostBridge.python to one of those, or install the universal MCP Host Bridge package (it installs the sidecar from the package index).`,
    );
  }
  return laidOutArgs(python.executable, bundle.launcher);
}

/** `python -I -S <launcher>`: the laid-out bundle's launch. */
export function laidOutArgs(python: string, launcher: string): SidecarCommand {
  return { command: python, args: ["-I", "-S", launcher] };
}

/** The vsce target of the platform package for this machine, e.g. `linux-x64`; undefined when none is built. */
export function platformTarget(
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
): string | undefined {
  const target = `${platform}-${arch}`;
  return ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"].includes(target) ? target : undefined;
}

/** The interpreter inside a virtual environment. */
export function venvPython(venv: string, platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? path.join(venv, "Scripts", "python.exe") : path.join(venv, "bin", "python");
}

/** Time limits of a first start of the universal package. */
export interface InstallLimits {
  /** `python -m venv`. */
  venvMs: number;
  /** The whole install from the package index: pip is killed after this. */
  onlineMs: number;
  /** pip's `--timeout` (per connection attempt and read) for the package index, in seconds; one retry. */
  pipTimeoutSeconds: number;
}

export const DEFAULT_LIMITS: InstallLimits = {
  venvMs: 60_000,
  onlineMs: 60_000,
  pipTimeoutSeconds: 15,
};

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * The universal package's first start: make sure a private environment with the bundled sidecar (its dependencies
 * from the package index) exists under `storageDir` and return its interpreter. The environment is keyed by the bundle and the interpreter, and built in its final folder (its
 * `bin/host-bridge`, `bin/pip` and `activate` name that folder) under a lock folder, so a second window waits
 * for it instead of building it too. It counts only once `.ready` is written: the leftovers of an attempt that
 * crashed or failed are removed and built again.
 */
export async function ensureEnvironment(options: {
  python: PythonInfo;
  storageDir: string;
  bundle: PipBundle;
  reporter: BootstrapReporter;
  pipArgs?: string[];
  limits?: Partial<InstallLimits>;
  /** The environment of venv and pip (default: this process's). */
  env?: NodeJS.ProcessEnv;
}): Promise<string> {
  const { python, storageDir, bundle, reporter } = options;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const hash = createHash("sha256");
  hash.update(await fs.readFile(bundle.wheel));
  hash.update(await fs.readFile(bundle.constraints));
  hash.update(bundle.manifest);
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
      `Python ${python.version} at ${python.executable} cannot create virtual environments (its venv module is missing). Set hostBridge.python to another interpreter.`,
    );
  }
  await fs.mkdir(root, { recursive: true });
  const waitMs = limits.venvMs + limits.onlineMs + 30_000;
  const release = await acquireLock(`${target}.lock`, ready, waitMs, reporter);
  if (release !== undefined) {
    try {
      if (!(await exists(ready))) {
        await fs.rm(target, { recursive: true, force: true });
        try {
          await build(target, { ...options, limits });
        } catch (error) {
          await fs.rm(target, { recursive: true, force: true }).catch(() => undefined);
          throw error;
        }
        await fs.writeFile(ready, new Date().toISOString());
      }
    } finally {
      await release();
    }
  }
  await removeOthers(root, key, reporter);
  return venvPython(target);
}

async function build(
  target: string,
  options: {
    python: PythonInfo;
    bundle: PipBundle;
    reporter: BootstrapReporter;
    pipArgs?: string[];
    limits: InstallLimits;
    env?: NodeJS.ProcessEnv;
  },
): Promise<void> {
  const { python, bundle, reporter, limits } = options;
  const env = { ...(options.env ?? process.env), PIP_NO_INPUT: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" };
  reporter.progress("creating a private Python environment");
  const venv = await runLogged(python.executable, ["-m", "venv", "--without-pip", target], {
    timeoutMs: limits.venvMs,
    env,
    reporter,
  });
  if (!venv.ok) {
    throw new BootstrapError(
      `could not create a Python environment with ${python.executable} (${venv.failure}). Details are in "MCP: Show Host Bridge Log".`,
    );
  }
  const args = [
    path.join(bundle.pip, "pip"),
    "install",
    "--no-compile",
    "--progress-bar",
    "off",
    "--constraint",
    bundle.constraints,
    "--find-links",
    bundle.wheelhouse,
    "--timeout",
    String(limits.pipTimeoutSeconds),
    "--retries",
    "1",
    ...(options.pipArgs ?? []),
    bundle.pip,
    bundle.wheel,
  ];
  reporter.progress("downloading the sidecar's Python packages");
  const started = Date.now();
  const install = await runLogged(venvPython(target), args, {
    timeoutMs: limits.onlineMs,
    env,
    reporter,
    onLine: (line) => {
      const fetching = /^\s*(?:Collecting|Downloading)\s+(\S+)/.exec(line);
      if (fetching?.[1] !== undefined) {
        const seconds = Math.round((Date.now() - started) / 1000);
        reporter.progress(`downloading the sidecar's Python packages: ${path.basename(fetching[1])} (${seconds} s)`);
      }
    },
  });
  if (install.ok) {
    return;
  }
  const why = install.timedOut
    ? `no answer from the package index in ${Math.round(limits.onlineMs / 1000)} s`
    : NETWORK.test(install.output)
      ? "the package index could not be reached"
      : install.failure;
  const fix = `Install the MCP Host Bridge .vsix for ${platformTarget() ?? "your platform"} (it needs no network), or set hostBridge.python to a Python with host-bridge installed.`;
  throw new BootstrapError(`could not download the sidecar's Python packages (${why}). ${fix}`);
}

/** pip's words for a package index it cannot reach. */
const NETWORK =
  /NewConnectionError|Connection refused|Failed to establish|Max retries exceeded|Name or service not known|Temporary failure in name resolution|nodename nor servname|getaddrinfo failed|Network is unreachable|No route to host|ConnectTimeout|Read timed out|timed out|ProxyError|SSLError|Could not fetch URL/i;

interface RunOutcome {
  ok: boolean;
  timedOut: boolean;
  /** Why it failed, for a message: "it timed out after 60 s", "it exited with 1". */
  failure: string;
  /** The output's last lines. */
  output: string;
}

/**
 * Run `command`, sending every output line to the log (and to `onLine`); kill it and everything it started
 * (its process group) after `timeoutMs`.
 */
function runLogged(
  command: string,
  args: string[],
  options: { timeoutMs: number; env: NodeJS.ProcessEnv; reporter: BootstrapReporter; onLine?: (line: string) => void },
): Promise<RunOutcome> {
  const { reporter } = options;
  reporter.log(`$ ${command} ${args.join(" ")}`);
  return new Promise((resolve) => {
    const kept: string[] = [];
    const take = (line: string): void => {
      if (line.trim() === "") {
        return;
      }
      reporter.log(line);
      kept.push(line);
      if (kept.length > 200) {
        kept.shift();
      }
      options.onLine?.(line);
    };
    const posix = process.platform !== "win32";
    const child = spawn(command, args, {
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: posix,
      windowsHide: true,
    });
    for (const stream of [child.stdout, child.stderr]) {
      let pending = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        const lines = (pending + chunk).split(/\r?\n/);
        pending = lines.pop() ?? "";
        lines.forEach(take);
      });
      stream.on("end", () => take(pending));
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reporter.log(`${path.basename(command)} did not finish within ${options.timeoutMs / 1000} s; stopping it`);
      try {
        if (posix && child.pid !== undefined) {
          process.kill(-child.pid, "SIGKILL");
        } else {
          child.kill("SIGKILL");
        }
      } catch {
        // Gone meanwhile.
      }
    }, options.timeoutMs);
    const finish = (outcome: Omit<RunOutcome, "output">): void => {
      clearTimeout(timer);
      resolve({ ...outcome, output: kept.join("\n") });
    };
    child.once("error", (error) =>
      finish({ ok: false, timedOut: false, failure: `it could not be run: ${error.message}` }),
    );
    child.once("close", (code, signal) => {
      if (timedOut) {
        finish({ ok: false, timedOut, failure: `it timed out after ${options.timeoutMs / 1000} s` });
      } else if (code === 0) {
        finish({ ok: true, timedOut, failure: "" });
      } else {
        finish({
          ok: false,
          timedOut,
          failure: code !== null ? `it exited with ${code}` : `it was stopped by ${signal}`,
        });
      }
    });
  });
}

interface LockOwner {
  pid: number;
  host: string;
  since: number;
}

/**
 * Take the lock folder `dir` (mkdir is atomic), waiting while another process holds it; undefined when
 * `ready` appeared meanwhile (the other process built the environment). A lock whose owner has died (on this
 * machine), or that is older than `waitMs`, is abandoned and taken over.
 */
async function acquireLock(
  dir: string,
  ready: string,
  waitMs: number,
  reporter: BootstrapReporter,
): Promise<(() => Promise<void>) | undefined> {
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    try {
      await fs.mkdir(dir);
      const owner: LockOwner = { pid: process.pid, host: os.hostname(), since: Date.now() };
      await fs.writeFile(path.join(dir, "owner.json"), JSON.stringify(owner));
      return () => fs.rm(dir, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        throw error;
      }
    }
    if (await exists(ready)) {
      return undefined;
    }
    if (await abandoned(dir, waitMs)) {
      reporter.log(`taking over ${dir}: the process that held it is gone`);
      await fs.rm(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new BootstrapError(
        `another window has been setting up the sidecar's environment for over ${Math.round(waitMs / 1000)} s. Run "MCP: Restart Host Bridge" to try again.`,
      );
    }
    if (!told) {
      told = true;
      reporter.progress("waiting for another window that is setting up the sidecar");
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function abandoned(dir: string, maxAgeMs: number): Promise<boolean> {
  let owner: Partial<LockOwner>;
  try {
    owner = JSON.parse(await fs.readFile(path.join(dir, "owner.json"), "utf8")) as Partial<LockOwner>;
  } catch {
    // Between mkdir and writing owner.json, or left by a crash right then.
    const stat = await fs.stat(dir).catch(() => undefined);
    return stat !== undefined && Date.now() - stat.mtimeMs > 10_000;
  }
  if (typeof owner.since === "number" && Date.now() - owner.since > maxAgeMs) {
    return true;
  }
  if (owner.host === os.hostname() && typeof owner.pid === "number") {
    try {
      process.kill(owner.pid, 0);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "ESRCH";
    }
  }
  return false;
}

/** Environments unused for this long are removed (other windows may still use recent ones). */
const STALE_MS = 7 * 24 * 60 * 60 * 1000;

async function removeOthers(root: string, keep: string, reporter: BootstrapReporter): Promise<void> {
  const now = Date.now();
  for (const name of await fs.readdir(root)) {
    // An environment counts from its `.ready`; a lock, a staging folder or an environment still being built
    // (by another window, for another interpreter) from the folder's own change time.
    const folder = path.join(root, name);
    const stat =
      (await fs.stat(path.join(folder, ".ready")).catch(() => undefined)) ??
      (await fs.stat(folder).catch(() => undefined));
    const used = stat?.mtimeMs ?? 0;
    if (name !== keep && now - used > STALE_MS) {
      await fs.rm(path.join(root, name), { recursive: true, force: true }).catch((error: unknown) => {
        reporter.log(`could not remove the old environment ${name}: ${String(error)}`);
      });
    }
  }
}
