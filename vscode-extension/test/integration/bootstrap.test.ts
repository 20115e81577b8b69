// A new user's first start, without VS Code: the bundled wheel is installed into a private environment by
// the same code the extension runs, and the sidecar from that environment answers `initialize`.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import { ensureEnvironment, findBundle, probe } from "../../src/bootstrap";

const BUNDLE = path.resolve(__dirname, "../../python");
const storage = mkdtempSync(path.join(tmpdir(), "hb-bootstrap-"));

afterAll(() => rmSync(storage, { recursive: true, force: true }));

describe("first start from the packaged bundle", () => {
  it("installs the sidecar into a private environment once and reuses it", async () => {
    const python = await probe(process.env.HOST_BRIDGE_BASE_PYTHON ?? "python3");
    expect(python, "python3 must be on PATH for this test").toBeDefined();
    if (python === undefined) {
      return;
    }
    const bundle = await findBundle(BUNDLE);
    const progress: string[] = [];
    const reporter = { progress: (message: string) => progress.push(message), log: () => undefined };
    const first = await ensureEnvironment({ python, storageDir: storage, bundle, reporter });
    expect(progress).toEqual(["creating a private Python environment", "installing the sidecar and its dependencies"]);
    const installed = await probe(first);
    expect(installed?.sidecarVersion).toBe("0.1.0");

    const again = await ensureEnvironment({ python, storageDir: storage, bundle, reporter });
    expect(again).toBe(first);
    expect(progress).toHaveLength(2);

    const child = spawn(first, ["-m", "host_bridge", "serve"], { stdio: "pipe" });
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
        initializationOptions: { storageDir: storage, readWorkspaceConfig: false },
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
  }, 600_000);
});
