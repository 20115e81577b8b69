// A new user's first start of the linux-x64 package with no network: a Python without host_bridge, pip pointed
// at a closed local port with no configuration and no cache, fresh extension storage, and a package nothing has
// run from yet. The sidecar runs from the package's own libraries, laid out ready to import (`python -I -S
// …/python/run_sidecar.py serve`): nothing is installed, nothing is downloaded, nothing is compiled when the package
// carries its modules compiled for this Python, and the first consent question appears. The time from page load to that question is printed (target 5 s), with where it went.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { EXTENSIONS_DIR, expect, filesystemServer, test } from "../support/fixtures";
import { vsixPath } from "../support/paths";
import { folderQuestion } from "../support/steps";
import { formatTimeline, startTimeline } from "../support/timeline";
import { waitFor } from "../support/workbench";

/**
 * This machine's python3 (without host_bridge, or the extension would use it as it is), as an absolute path, with
 * its version (`3.12`).
 */
function basePython(): { executable?: string; version?: string; why?: string } {
  const command = process.env.HOST_BRIDGE_BASE_PYTHON ?? "python3";
  const script = "import importlib.util, sys; print(sys.executable); print(importlib.util.find_spec('host_bridge') is not None); print('%d.%d' % sys.version_info[:2])";
  try {
    const out = execFileSync(command, ["-I", "-c", script], { encoding: "utf8" }).trim();
    const [executable, hasSidecar, version] = out.split("\n");
    return hasSidecar === "True" ? { why: `${executable} already has host_bridge (set HOST_BRIDGE_BASE_PYTHON)` } : { executable, version };
  } catch (error) {
    return { why: `${command} cannot be run: ${String(error)}` };
  }
}

/** No PIP_* of this machine; an index nobody listens on; no configuration file; no cache. */
function offlineEnv(): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("PIP_"))),
    PIP_INDEX_URL: "http://127.0.0.1:9/",
    PIP_CONFIG_FILE: "/dev/null",
    PIP_NO_CACHE_DIR: "1",
  };
}

/** The `python/` folder of the package the global setup installed. */
function installedBundle(): string {
  const [folder, ...others] = readdirSync(EXTENSIONS_DIR).filter((name) => name.startsWith("host-bridge.host-bridge-"));
  if (folder === undefined || others.length > 0) {
    throw new Error(`expected one installed host-bridge in ${EXTENSIONS_DIR}, found ${[folder, ...others].join(", ")}`);
  }
  return path.join(EXTENSIONS_DIR, folder, "python");
}

/** The files under the installed `python/lib` that were compiled there, not carried by the package (relative paths). */
function compiledHere(lib: string, python: string): string[] {
  const listing = "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))";
  const carried = new Set(execFileSync(python, ["-I", "-c", listing, vsixPath()], { encoding: "utf8" }).split("\n"));
  return readdirSync(lib, { recursive: true, encoding: "utf8" }).filter(
    (name) => path.basename(path.dirname(name)) === "__pycache__" && !carried.has(`extension/python/lib/${name.split(path.sep).join("/")}`),
  );
}

/** The Python versions the package's libraries are compiled for (bundle.json `compiled`). */
function compiledFor(bundle: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(bundle, "bundle.json"), "utf8")) as { compiled?: string[] };
  return manifest.compiled ?? [];
}

/** One MCP `initialize` through `command args` (`host_bridge attach`, as VS Code's MCP support runs it): the answer's line. */
async function attachInitialize(command: string, args: string[], cwd: string): Promise<string> {
  const child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.resume();
  const params = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "firstStart.spec", version: "1" } };
  child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params })}\n`);
  try {
    return await waitFor("attach to answer initialize", () => stdout.split("\n").find((line) => line.includes('"id":1')));
  } finally {
    child.kill();
  }
}

test("the first start of the linux-x64 package runs the sidecar from its own libraries, without network, and asks about folders", async ({ folders, openEditor }) => {
  const python = basePython();
  test.skip(python.executable === undefined, python.why ?? "");
  // Python compiles what the package does not carry compiled for it, and writes it next to the modules: start from
  // what a fresh install holds, even if a spec before this one ran the package's libraries.
  const bundle = installedBundle();
  const lib = path.join(bundle, "lib");
  for (const file of compiledHere(lib, python.executable ?? "")) {
    rmSync(path.join(lib, file), { force: true });
  }
  const wb = await openEditor({ servers: { fs: filesystemServer() }, python: python.executable, env: offlineEnv() });

  await wb.waitForDialog(folderQuestion("fs"));
  // Milliseconds since this page started loading, measured by the page itself, and where they went.
  const sincePageLoad = await wb.page.evaluate(() => performance.now());
  const pageOrigin = await wb.page.evaluate(() => performance.timeOrigin);
  console.log(formatTimeline(startTimeline(wb.server, pageOrigin, sincePageLoad)));
  console.log(`first start offline: ${(sincePageLoad / 1000).toFixed(1)} s from page load to the folder question (target 5 s)`);

  // The sidecar runs from the package's libraries, isolated; nothing was installed, nothing was downloaded.
  const launcher = path.join(bundle, "run_sidecar.py");
  const log = wb.server.extensionLog();
  expect(log).toContain("running the sidecar from the package's libraries for linux-x64; nothing to install");
  expect(log).toContain(`starting the sidecar: ${python.executable} -I -S ${launcher} serve`);
  // It was started while the interpreter was probed, and kept.
  expect(log).not.toContain("the sidecar started meanwhile is not the one chosen");
  expect(wb.sidecars().map((info) => info.command)).toEqual([`${python.executable} -I -S ${launcher} serve`]);
  expect(log).not.toMatch(/ -m venv | pip install |127\.0\.0\.1:9|Retrying|NewConnectionError/);
  expect(existsSync(path.join(wb.server.storageDir, "sidecar-env")), "a private environment was made").toBe(false);
  if (compiledFor(bundle).includes(python.version ?? "")) {
    // The package carries its modules compiled for this Python: the first start compiled none.
    expect(compiledHere(lib, python.executable ?? "")).toEqual([]);
  } else {
    // Python kept what it compiled, next to the libraries: the next start does not compile again.
    expect(existsSync(path.join(lib, "common", "host_bridge", "__pycache__"))).toBe(true);
  }

  // VS Code's MCP support runs `attach` the way the sidecar runs: it reaches the sidecar's server.
  const attachArgs = ["-I", "-S", launcher, "attach", "fs", "--workspace", folders.alpha, "--storage-dir", wb.server.storageDir];
  const answer = JSON.parse(await attachInitialize(python.executable ?? "", attachArgs, folders.alpha)) as {
    result?: { serverInfo?: { name?: string } };
  };
  expect(answer.result?.serverInfo?.name).toBe("secure-filesystem-server");

  await wb.pressDialogButton("Don't Share");
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);
});
