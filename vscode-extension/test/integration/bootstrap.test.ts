// A new user's first start, without VS Code, from the built packages in dist/ (make extension): the same code
// the extension runs installs the sidecar into a private environment. The linux-x64 package does it with the
// package index unreachable; the universal one then fails fast with a message that fits a notification.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { hostname, tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import {
  BootstrapError,
  ensureEnvironment,
  findBundle,
  installsOffline,
  probe,
  type Bundle,
  type PythonInfo,
} from "../../src/bootstrap";

const DIST = path.resolve(__dirname, "../../dist");
const scratch = mkdtempSync(path.join(tmpdir(), "hb-bootstrap-"));

/** pip with no configuration (none of this machine's PIP_* either), no cache, and an index on a closed local port. */
const OFFLINE_ENV: NodeJS.ProcessEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("PIP_"))),
  PIP_INDEX_URL: "http://127.0.0.1:9/",
  PIP_CONFIG_FILE: "/dev/null",
  PIP_NO_CACHE_DIR: "1",
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

/** Interpreters without host_bridge to install into: python3, python3.11… on PATH and HOST_BRIDGE_TEST_PYTHONS. */
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

describe("first start from the linux-x64 package, with the package index unreachable", () => {
  let bundle: Bundle;
  let pythons: PythonInfo[];

  beforeAll(async () => {
    bundle = await unpacked(/^host-bridge-linux-x64-.*\.vsix$/);
    pythons = await basePythons();
  });

  it("installs the sidecar for every available Python, once, with working bin/host-bridge and bin/pip", async () => {
    expect(pythons.length, "python3 without host_bridge must be on PATH").toBeGreaterThan(0);
    for (const python of pythons) {
      expect(installsOffline(bundle, python.version), python.version).toBe(true);
      const storageDir = mkdtempSync(path.join(scratch, "storage-"));
      const { progress, log, reporter } = recorder();
      const started = Date.now();
      // Two windows starting at once: one builds, the other waits for it.
      const [first, second] = await Promise.all([
        ensureEnvironment({ python, storageDir, bundle, reporter, env: OFFLINE_ENV }),
        ensureEnvironment({ python, storageDir, bundle, reporter, env: OFFLINE_ENV }),
      ]);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`offline first start with Python ${python.version}: ${seconds} s`);
      expect(second).toBe(first);
      expect(progress.filter((m) => m === "installing the sidecar from the extension package")).toHaveLength(1);
      expect(log.join("\n")).toContain("--no-index");
      expect((await probe(first))?.sidecarVersion).toBe("0.1.0");

      // The scripts name the environment's own interpreter, in the folder it stays in.
      const bin = path.dirname(first);
      for (const script of ["host-bridge", "pip"]) {
        expect(readFileSync(path.join(bin, script), "utf8").split("\n")[0]).toBe(`#!${first}`);
      }
      expect(execFileSync(path.join(bin, "host-bridge"), ["--help"], { encoding: "utf8" })).toMatch(
        /^usage: host-bridge/,
      );
      expect(execFileSync(path.join(bin, "pip"), ["--version"], { encoding: "utf8" })).toContain(
        path.join(path.dirname(bin), "lib"),
      );
      expect(readFileSync(path.join(bin, "activate"), "utf8")).toContain(path.dirname(bin));
      // Later starts reuse it without reporting progress.
      const again = recorder();
      expect(await ensureEnvironment({ python, storageDir, bundle, reporter: again.reporter, env: OFFLINE_ENV })).toBe(
        first,
      );
      expect(again.progress).toEqual([]);
    }
  }, 600_000);

  it("takes over what a window that died mid-install left, and the sidecar answers initialize", async () => {
    const python = pythons[0];
    expect(python).toBeDefined();
    if (python === undefined) {
      return;
    }
    const storageDir = mkdtempSync(path.join(scratch, "storage-"));
    // A first attempt: its environment is complete but for `.ready`; then plant the lock of a dead process.
    const first = await ensureEnvironment({
      python,
      storageDir,
      bundle,
      reporter: recorder().reporter,
      env: OFFLINE_ENV,
    });
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
    const python2 = await ensureEnvironment({ python, storageDir, bundle, reporter, env: OFFLINE_ENV });
    expect(python2).toBe(first);
    expect(log.join("\n")).toContain("the process that held it is gone");
    expect(progress).toContain("installing the sidecar from the extension package");
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
});

describe("first start from the universal package without a package index", () => {
  let bundle: Bundle;
  let python: PythonInfo | undefined;

  beforeAll(async () => {
    bundle = await unpacked(/^host-bridge-\d[^-]*\.vsix$/);
    python = (await basePythons())[0];
  });

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
    expect(installsOffline(bundle, python?.version ?? "")).toBe(false);
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
