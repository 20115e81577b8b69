// A new user's first start, without VS Code, from the built packages in dist/ (make extension), with the code the
// extension runs. The linux-x64 package runs the sidecar from its own libraries, laid out ready to import, with
// nothing to install and no network: isolated from whatever the interpreter, the user's site-packages or
// PYTHONPATH hold, for every Python found here; `attach` runs the same way. The universal package installs into a
// private environment (here from the wheel cache the build filled, as its package index); without an index it
// fails fast with a message that fits a notification.
import { execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { homedir, hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import {
  BootstrapError,
  carries,
  ensureEnvironment,
  findBundle,
  laidOutCommand,
  moduleCommand,
  probe,
  type Bundle,
  type LaidOutBundle,
  type PipBundle,
  type PythonInfo,
  type SidecarCommand,
} from "../../src/sidecar/bootstrap";
import * as protocol from "../../src/protocol";
import { fixtureServer, folderUri, recordedRoots } from "./fixtures";
import { SidecarProcess } from "./sidecarProcess";
import { waitFor, withTimeout } from "./waitFor";

const DIST = path.resolve(__dirname, "../../dist");
const scratch = realpathSync(mkdtempSync(path.join(tmpdir(), "hb-bootstrap-")));
/** A sidecar's start and any later event, on a shared two-core machine. */
const START_MS = 60_000;

/** pip with no configuration (none of this machine's PIP_* either), no cache, and an index on a closed local port. */
const OFFLINE_ENV: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("PIP_"))),
  PIP_INDEX_URL: "http://127.0.0.1:9/",
  PIP_CONFIG_FILE: "/dev/null",
  PIP_NO_CACHE_DIR: "1",
  // The gateway also registers in the user's data folder: keep that in the scratch folder.
  XDG_DATA_HOME: path.join(scratch, "data"),
};

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The `python/` bundle of the built package whose file name matches `pattern`, unpacked. */
async function unpacked(pattern: RegExp): Promise<Bundle> {
  const vsix = readdirSync(DIST).find((name) => pattern.test(name));
  if (vsix === undefined) {
    throw new Error(`no package matching ${pattern} in ${DIST}: run make extension`);
  }
  const into = mkdtempSync(path.join(scratch, "vsix-"));
  execFileSync("python3", ["-m", "zipfile", "-e", path.join(DIST, vsix), into]);
  return findBundle(path.join(into, "extension", "python"));
}

/** Interpreters without host_bridge: python3, python3.11… on PATH and HOST_BRIDGE_TEST_PYTHONS. */
async function basePythons(): Promise<PythonInfo[]> {
  const extra = (process.env.HOST_BRIDGE_TEST_PYTHONS ?? "").split(path.delimiter).filter((item) => item !== "");
  const found = new Map<string, PythonInfo>();
  for (const command of [
    process.env.HOST_BRIDGE_BASE_PYTHON ?? "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "python3.14",
    ...extra,
  ]) {
    const info = await probe(command);
    const minor = info?.version.split(".").slice(0, 2).join(".");
    if (info !== undefined && minor !== undefined && info.sidecarVersion === undefined && !found.has(minor)) {
      found.set(minor, info);
    }
  }
  return [...found.values()];
}

function recorder(): {
  progress: string[];
  log: string[];
  reporter: { progress(m: string): void; log(l: string): void };
} {
  const progress: string[] = [];
  const log: string[] = [];
  return { progress, log, reporter: { progress: (m) => progress.push(m), log: (l) => log.push(l) } };
}

/** Every `__pycache__` folder under `folder`. */
/** The compiled modules under `folder` (paths relative to it). */
function compiledFiles(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".pyc"));
}

/** Two workspace folders with a README each, and a storage folder. */
function workspace(): { alpha: string; beta: string; storage: string } {
  const root = mkdtempSync(path.join(scratch, "ws-"));
  const folders = { alpha: path.join(root, "alpha"), beta: path.join(root, "beta"), storage: path.join(root, "s") };
  for (const folder of [folders.alpha, folders.beta]) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "README.md"), "# hello\n");
  }
  return folders;
}

/** Start the sidecar with `command` and `env`, answer consent with `answer`, send initialize and initialized. */
async function startSidecar(
  command: SidecarCommand,
  env: NodeJS.ProcessEnv,
  folders: { alpha: string; beta: string; storage: string },
  servers: Record<string, unknown> = {},
  answer: (params: protocol.AskConsentParams) => protocol.AskConsentResult = () => ({ decisions: [] }),
): Promise<{ sidecar: SidecarProcess; result: unknown }> {
  const sidecar = SidecarProcess.start({ python: command.command, command, env, cwd: scratch, answerConsent: answer });
  try {
    const result = await withTimeout(
      sidecar.connection.sendRequest("initialize", {
        processId: process.pid,
        rootUri: null,
        capabilities: { experimental: { hostBridge: { consentUi: true } } },
        workspaceFolders: [
          { uri: folderUri(folders.alpha), name: "alpha" },
          { uri: folderUri(folders.beta), name: "beta" },
        ],
        // The recorder writes its file outside the folders shared with it: no OS sandbox here (sandbox.spec.ts).
        initializationOptions: { storageDir: folders.storage, readWorkspaceConfig: false, servers, sandbox: "off" },
      }),
      START_MS,
      "the answer to initialize",
    );
    await sidecar.connection.sendNotification("initialized", {});
    return { sidecar, result };
  } catch (error) {
    console.error(sidecar.diagnostics());
    await sidecar.stop(5_000);
    throw error;
  }
}

/** `status` answered (the core and every dependency imported), then shutdown and exit 0. */
async function statusThenExit(sidecar: SidecarProcess): Promise<protocol.StatusResult> {
  try {
    const status = await withTimeout(sidecar.connection.sendRequest(protocol.status, {}), START_MS, "status");
    expect(await sidecar.shutdown(START_MS)).toEqual({ code: 0, signal: null });
    return status;
  } catch (error) {
    console.error(sidecar.diagnostics());
    throw error;
  } finally {
    await sidecar.stop(5_000);
  }
}

/** One MCP exchange with `host_bridge attach`: send initialize, return the answer's line. */
async function attachInitialize(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const child = spawn(command, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bootstrap test", version: "1" } },
  };
  child.stdin.write(`${JSON.stringify(initialize)}\n`);
  try {
    return await waitFor(
      () => stdout.split("\n").find((line) => line.includes('"id":1')),
      START_MS,
      () => `attach to answer initialize (stderr: ${stderr})`,
    );
  } finally {
    child.stdin.end();
    await withTimeout(
      new Promise((resolve) => child.once("exit", resolve)),
      10_000,
      "attach to exit at the end of its input",
    ).catch(() => child.kill("SIGKILL"));
  }
}

describe("first start of the linux-x64 package: the sidecar runs from the package's libraries", () => {
  let bundle: LaidOutBundle;
  let pythons: PythonInfo[];

  beforeAll(async () => {
    const found = await unpacked(/^host-bridge-linux-x64-.*\.vsix$/);
    if (found.kind !== "laidOut") {
      throw new Error(`the linux-x64 package's bundle is ${found.kind}, not laid out ready to import`);
    }
    bundle = found;
    pythons = await basePythons();
  });

  it("answers initialize and status for every available Python, ignoring PYTHONPATH, PYTHONHOME and user site-packages", async () => {
    expect(pythons.length, "python3 without host_bridge must be on PATH").toBeGreaterThan(0);
    const lib = path.join(path.dirname(bundle.launcher), "lib");
    // A fresh package holds compiled modules only for the Pythons its bundle.json says it was compiled for.
    const manifest = JSON.parse(readFileSync(path.join(path.dirname(bundle.launcher), "bundle.json"), "utf8")) as {
      compiled: string[];
    };
    const tags = new Set(manifest.compiled.map((version) => `cpython-${version.replace(".", "")}`));
    const fresh = compiledFiles(lib);
    expect(fresh.length, "the package carries compiled modules").toBeGreaterThan(0);
    expect(
      fresh.filter((file) => !tags.has(file.split(".").at(-2) ?? "")),
      "compiled only for the Pythons bundle.json names",
    ).toEqual([]);
    // What a user's environment may hold: a broken pydantic and host_bridge first on PYTHONPATH and in the user's
    // site-packages, and a PYTHONHOME that would break the standard library.
    const shadow = path.join(scratch, "shadow");
    const home = path.join(scratch, "home");
    for (const folder of [
      shadow,
      ...["3.11", "3.12", "3.13", "3.14"].map((v) => `${home}/.local/lib/python${v}/site-packages`),
    ]) {
      for (const name of ["pydantic", "host_bridge", "lsprotocol"]) {
        mkdirSync(path.join(folder, name), { recursive: true });
        writeFileSync(
          path.join(folder, name, "__init__.py"),
          `raise ImportError("the shadowing ${name} was imported")\n`,
        );
      }
    }
    const env = { ...OFFLINE_ENV, PYTHONPATH: shadow, PYTHONHOME: "/nonexistent", HOME: home };
    for (const python of pythons) {
      expect(carries(bundle, python), python.version).toBe(true);
      const command = laidOutCommand(bundle, python);
      expect(command).toEqual({ command: python.executable, args: ["-I", "-S", bundle.launcher] });
      const started = Date.now();
      const { sidecar, result } = await startSidecar(command, env, workspace());
      expect(result, sidecar.diagnostics()).toMatchObject({ serverInfo: { name: "host-bridge", version: "0.1.0" } });
      const status = await statusThenExit(sidecar);
      expect(status.servers).toEqual([]);
      console.log(`first start from the package's libraries with Python ${python.version}: ${Date.now() - started} ms`);
    }
    // Each Python found its compiled modules in the package or wrote them next to the libraries: the next start does
    // not compile them again.
    const compiledFor = new Set(compiledFiles(lib).map((file) => file.split(".").at(-2)));
    for (const python of pythons) {
      const [major, minor] = python.version.split(".");
      expect(compiledFor.has(`cpython-${major}${minor}`), python.version).toBe(true);
    }
  }, 600_000);

  it("ignores the site-packages and .pth files of the interpreter it runs with", async () => {
    const python = pythons[0];
    expect(python).toBeDefined();
    if (python === undefined) {
      return;
    }
    // A virtual environment stands in for an interpreter with packages of its own: a broken pydantic and a .pth
    // file (run at start-up by `site`) that would leave a mark.
    const venv = path.join(scratch, "base-venv");
    execFileSync(python.executable, ["-m", "venv", "--without-pip", venv]);
    const base = await probe(path.join(venv, "bin", "python"));
    expect(base).toBeDefined();
    const site = execFileSync(
      path.join(venv, "bin", "python"),
      ["-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
      {
        encoding: "utf8",
      },
    ).trim();
    mkdirSync(path.join(site, "pydantic"));
    writeFileSync(path.join(site, "pydantic", "__init__.py"), 'raise ImportError("the interpreter\'s own pydantic")\n');
    const mark = path.join(scratch, "pth-ran");
    writeFileSync(path.join(site, "zz-mark.pth"), `import pathlib; pathlib.Path(${JSON.stringify(mark)}).touch()\n`);
    if (base === undefined) {
      return;
    }
    const { sidecar } = await startSidecar(laidOutCommand(bundle, base), OFFLINE_ENV, workspace());
    await statusThenExit(sidecar);
    expect(existsSync(mark), "the .pth file of the interpreter's site-packages ran").toBe(false);
  }, 300_000);

  it("asks about folders, shares the one allowed, and serves attach the same way", async () => {
    const python = pythons[0];
    if (python === undefined) {
      throw new Error("python3 without host_bridge must be on PATH");
    }
    const command = laidOutCommand(bundle, python);
    const folders = workspace();
    const record = path.join(scratch, "roots.jsonl");
    const servers = { rec: fixtureServer("roots_recorder.py", "--pin", "2025-11-25", "--record", record) };
    const alpha = folderUri(folders.alpha);
    const { sidecar } = await startSidecar(command, OFFLINE_ENV, folders, servers, (params) => ({
      decisions: params.roots.map((root) => ({ uri: root.uri, decision: root.uri === alpha ? "allow" : "deny" })),
    }));
    try {
      await sidecar.until(() => sidecar.received.asks.length > 0, START_MS, "the consent question");
      expect(sidecar.received.asks[0]?.server.id).toBe("rec");
      await waitFor(
        () => recordedRoots(record).some((answer) => answer.roots.map((root) => root.uri).join() === alpha),
        START_MS,
        "the recorder to get the allowed folder",
      );
      // VS Code's MCP support runs `<sidecar command> attach <id> --workspace … --storage-dir …`.
      const args = [...command.args, "attach", "rec", "--workspace", folders.alpha, "--storage-dir", folders.storage];
      const line = await attachInitialize(command.command, args, OFFLINE_ENV, folders.alpha);
      const answer = JSON.parse(line) as { id?: unknown; result?: { serverInfo?: { name?: unknown } } };
      expect(answer.id).toBe(1);
      expect(typeof answer.result?.serverInfo?.name, line).toBe("string");
      expect(await sidecar.shutdown(START_MS)).toEqual({ code: 0, signal: null });
    } catch (error) {
      console.error(sidecar.diagnostics());
      throw error;
    } finally {
      await sidecar.stop(5_000);
    }
  }, 300_000);

  it("says which Pythons it carries when run by another one", () => {
    const older = ["python3.10", "python3.9"].find((command) => {
      try {
        execFileSync(command, ["-c", ""], { stdio: "ignore" });
        return true;
      } catch {
        return false;
      }
    });
    if (older === undefined) {
      console.log("no python3.10 or python3.9 here: the launcher's refusal is not run");
      return;
    }
    const refusal = (() => {
      try {
        execFileSync(older, ["-I", "-S", bundle.launcher, "serve"], { encoding: "utf8", stdio: "pipe" });
        return { status: 0, stderr: "" };
      } catch (error) {
        const failed = error as { status: number; stderr: string };
        return { status: failed.status, stderr: failed.stderr };
      }
    })();
    expect(refusal.status).toBe(3);
    expect(refusal.stderr).toMatch(
      /^host_bridge: this extension package carries the sidecar for CPython 3\.11, 3\.12, 3\.13, 3\.14, not for cpython 3\.(9|10) /,
    );
  });
});

/** The wheel cache the build filled (scripts/bundle_python.py): the universal package's index in these tests. */
function wheelCache(): string {
  const configured = process.env.HOST_BRIDGE_WHEEL_CACHE;
  const cache =
    configured ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), ".cache"), "host-bridge", "wheels");
  if (!existsSync(cache)) {
    throw new Error(`no wheel cache at ${cache}: run make extension (it fills it)`);
  }
  return cache;
}

describe("first start of the universal package: a private environment", () => {
  let bundle: PipBundle;
  let python: PythonInfo | undefined;
  /** The build's wheel cache instead of the package index. */
  let localIndex: string[];

  beforeAll(async () => {
    const found = await unpacked(/^host-bridge-\d[^-]*\.vsix$/);
    if (found.kind !== "pip") {
      throw new Error(`the universal package's bundle is ${found.kind}, not one to install with pip`);
    }
    bundle = found;
    python = (await basePythons())[0];
    localIndex = ["--no-index", "--find-links", wheelCache()];
  });

  it("installs the sidecar once for two windows, with working bin/host-bridge and bin/pip", async () => {
    if (python === undefined) {
      throw new Error("python3 without host_bridge must be on PATH");
    }
    const storageDir = mkdtempSync(path.join(scratch, "storage-"));
    const { progress, log, reporter } = recorder();
    const options = { python, storageDir, bundle, reporter, env: OFFLINE_ENV, pipArgs: localIndex };
    // Two windows starting at once: one builds, the other waits for it.
    const [first, second] = await Promise.all([ensureEnvironment(options), ensureEnvironment(options)]);
    expect(second).toBe(first);
    expect(progress.filter((m) => m === "downloading the sidecar's Python packages")).toHaveLength(1);
    expect((await probe(first))?.sidecarVersion).toBe("0.1.0");
    expect(moduleCommand(first)).toEqual({ command: first, args: ["-m", "host_bridge"] });
    expect(log.join("\n")).toContain("--constraint");
    // The scripts name the environment's own interpreter, in the folder it stays in.
    const bin = path.dirname(first);
    for (const script of ["host-bridge", "pip"]) {
      expect(readFileSync(path.join(bin, script), "utf8").split("\n")[0]).toBe(`#!${first}`);
    }
    expect(execFileSync(path.join(bin, "host-bridge"), ["--help"], { encoding: "utf8" })).toMatch(
      /^usage: host-bridge/,
    );
    // Later starts reuse it without reporting progress.
    const again = recorder();
    expect(await ensureEnvironment({ ...options, reporter: again.reporter })).toBe(first);
    expect(again.progress).toEqual([]);
  }, 600_000);

  it("takes over what a window that died mid-install left, and the sidecar answers initialize", async () => {
    if (python === undefined) {
      throw new Error("python3 without host_bridge must be on PATH");
    }
    const storageDir = mkdtempSync(path.join(scratch, "storage-"));
    const options = { python, storageDir, bundle, env: OFFLINE_ENV, pipArgs: localIndex };
    // A first attempt: its environment is complete but for `.ready`; then plant the lock of a dead process.
    const first = await ensureEnvironment({ ...options, reporter: recorder().reporter });
    const env = path.dirname(path.dirname(first));
    rmSync(path.join(env, ".ready"));
    const dead = spawn(process.execPath, ["-e", ""]);
    const deadPid = await new Promise<number>((resolve) => dead.on("exit", () => resolve(dead.pid ?? 0)));
    mkdirSync(`${env}.lock`);
    writeFileSync(
      path.join(`${env}.lock`, "owner.json"),
      JSON.stringify({ pid: deadPid, host: hostname(), since: Date.now() }),
    );

    const { progress, log, reporter } = recorder();
    const python2 = await ensureEnvironment({ ...options, reporter });
    expect(python2).toBe(first);
    expect(log.join("\n")).toContain("the process that held it is gone");
    expect(progress).toContain("downloading the sidecar's Python packages");
    expect(existsSync(`${env}.lock`)).toBe(false);
    expect(existsSync(path.join(env, ".ready"))).toBe(true);

    const child = spawn(python2, ["-m", "host_bridge", "serve"], { stdio: "pipe" });
    const stderr: string[] = [];
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    connection.listen();
    try {
      const result = await connection.sendRequest<{ serverInfo?: { name?: string } }>("initialize", {
        processId: process.pid,
        rootUri: null,
        capabilities: {},
        initializationOptions: { storageDir, readWorkspaceConfig: false },
        workspaceFolders: [],
      });
      expect(result.serverInfo?.name, stderr.join("")).toBe("host-bridge");
      await connection.sendRequest("shutdown");
      await connection.sendNotification("exit");
      expect(await exited).toBe(0);
    } finally {
      connection.dispose();
      child.kill();
    }
  }, 300_000);

  /** What the user sees: the notification text `MCP Host Bridge: <message>`. */
  async function failure(options: {
    env: NodeJS.ProcessEnv;
    limits?: { onlineMs: number };
  }): Promise<{ toast: string; log: string; progress: string[]; storageDir: string }> {
    if (python === undefined) {
      throw new Error("python3 without host_bridge must be on PATH");
    }
    const storageDir = mkdtempSync(path.join(scratch, "storage-"));
    const { progress, log, reporter } = recorder();
    const error: unknown = await ensureEnvironment({ python, storageDir, bundle, reporter, ...options }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BootstrapError);
    return { toast: `MCP Host Bridge: ${(error as Error).message}`, log: log.join("\n"), progress, storageDir };
  }

  it("says in one short sentence that the index could not be reached, and which package needs no network", async () => {
    const started = Date.now();
    const { toast, log, progress, storageDir } = await failure({ env: OFFLINE_ENV });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(toast).toBe(
      "MCP Host Bridge: could not download the sidecar's Python packages (the package index could not be reached). Install the MCP Host Bridge .vsix for linux-x64 (it needs no network), or set hostBridge.python to a Python with host-bridge installed.",
    );
    expect(toast.length).toBeLessThan(300);
    expect(progress).toContain("downloading the sidecar's Python packages");
    expect(log).toContain("--timeout 15 --retries 1");
    // pip's own words stay in the log; no half-built environment stays behind.
    expect(log).toMatch(/127\.0\.0\.1/);
    expect(readdirSync(path.join(storageDir, "sidecar-env"))).toEqual([]);
  }, 120_000);

  it("stops pip when the index accepts connections but never answers", async () => {
    const sockets: Socket[] = [];
    const server: Server = createServer((socket) => sockets.push(socket));
    const port = await new Promise<number>((resolve) =>
      server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
    );
    try {
      const started = Date.now();
      const { toast, log } = await failure({
        env: { ...OFFLINE_ENV, PIP_INDEX_URL: `http://127.0.0.1:${port}/simple/` },
        limits: { onlineMs: 10_000 },
      });
      const elapsed = Date.now() - started;
      expect(toast).toMatch(
        /^MCP Host Bridge: could not download the sidecar's Python packages \(no answer from the package index in 10 s\)\. Install/,
      );
      expect(toast.length).toBeLessThan(300);
      expect(log).toContain("did not finish within 10 s; stopping it");
      expect(sockets.length, "pip connected to the hanging index").toBeGreaterThan(0);
      expect(elapsed).toBeLessThan(30_000);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      server.close();
    }
  }, 120_000);
});
