// VS Code's own MCP support with host_bridge: it lists each server host_bridge runs as "<id> (MCP Host Bridge)"
// and starts it through `host-bridge attach`, which reaches the sidecar's one live connection, so there is one
// server process and the folders the user shares (or stops sharing) are what that server sees; and a server of
// the workspace's .vscode/mcp.json, which VS Code could start on its own, is pointed out once per workspace.
import { readFileSync } from "node:fs";
import path from "node:path";
import { type CodeServer } from "../support/codeServer";
import { expect, filesystemServer, test } from "../support/fixtures";
import { writeWorkspaceServers } from "../support/folders";
import { SERVER_FILESYSTEM } from "../support/paths";
import { type ProcessInfo, isRunning } from "../support/processes";
import { FILESYSTEM_ROOTS, ServerLog, extensionLogLength } from "../support/serverLog";
import { folderQuestion, setChecked, shareOnly, trustQuestion } from "../support/steps";
import { type Workbench, waitFor } from "../support/workbench";

const FILES = "files";
const LABEL = `${FILES} (MCP Host Bridge)`;
/** What the extension logs where VS Code has no `registerMcpServerDefinitionProvider`. */
const NO_API = /this VS Code has no MCP server definition API.*/;
/** The notice about a server VS Code's own MCP support can also start (the toast; the log has it without the prefix). */
const NOTICE_TEXT = "VS Code's own MCP support also reads “repo”";
const NOTICE = `MCP Host Bridge: ${NOTICE_TEXT}`;

/** The processes of `processes` whose parent is not one of them: one per process tree. */
function treeRoots(processes: readonly ProcessInfo[]): ProcessInfo[] {
  const pids = new Set(processes.map((info) => info.pid));
  return processes.filter((info) => !pids.has(info.ppid));
}

/** The gateway's record of agent sessions (`gateway.jsonl` in the extension's storage). */
function gatewaySessions(server: CodeServer): { event: string; server: string }[] {
  try {
    return readFileSync(path.join(server.storageDir, "gateway.jsonl"), "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as { event: string; server: string });
  } catch {
    return [];
  }
}

/** Skip the test, at run time, where this code-server's VS Code cannot list extension-provided MCP servers. */
function skipWithoutApi(wb: Workbench): void {
  const missing = NO_API.exec(wb.server.extensionLog());
  test.skip(missing !== null, `code-server's VS Code lacks vscode.lm.registerMcpServerDefinitionProvider: ${missing?.[0] ?? ""}`);
}

/** VS Code's Output panel. */
function outputPanel(wb: Workbench) {
  return wb.page.locator(".part.panel .monaco-editor .view-lines");
}

test("VS Code's own MCP lists the shared server, runs it through host-bridge attach, and sees a revoked folder go", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() }, vsCodeMcp: true });
  const log = new ServerLog(wb.server, FILES);
  await shareOnly(wb, FILES, { alpha: true, beta: true });
  expect((await log.waitForLine(FILESYSTEM_ROOTS))[1]).toBe("2");
  skipWithoutApi(wb);

  // "MCP: List Servers" is VS Code's own list: the server is there, under MCP Host Bridge, not started yet.
  await wb.runCommand("MCP: List Servers");
  await expect(wb.quickRow(LABEL)).toContainText("Stopped");
  await expect(wb.quickRow(LABEL)).toContainText("MCP Host Bridge");
  await wb.quickRow(LABEL).click();
  await wb.quickRow(/^Start Server$/).click();

  // VS Code starts `host_bridge attach` the way the sidecar runs (`python -m host_bridge attach`, or a platform
  // package's `python -I -S …/run_sidecar.py attach`), with the first folder and the sidecar's storage.
  const attach = await waitFor("VS Code to run host_bridge attach", () => wb.processesRunning(` attach ${FILES} --workspace `)[0]);
  expect(attach.command).toContain(`--workspace ${folders.alpha} --storage-dir ${wb.server.storageDir}`);
  expect(attach.command.startsWith(wb.sidecars()[0]?.command.split(" ")[0] ?? "?")).toBe(true);
  // VS Code shows its own log of the server, which says it got the tools; the gateway recorded VS Code's session.
  await expect(outputPanel(wb)).toContainText(`Starting server ${LABEL}`);
  await expect(outputPanel(wb)).toContainText(/Discovered\s+\d+\s+tools/);
  await waitFor("the gateway to record VS Code's session", () =>
    gatewaySessions(wb.server).find((entry) => entry.event === "initialized" && entry.server === FILES),
  );
  await wb.runCommand("MCP: List Servers");
  await expect(wb.quickRow(LABEL)).toContainText("Running");
  await wb.screenshot("vscode-mcp-servers");
  await wb.page.keyboard.press("Escape");

  // One server-filesystem: the sidecar's, which VS Code uses too.
  const [tree, ...others] = treeRoots(wb.processesRunning(SERVER_FILESYSTEM));
  expect(tree, "a running server-filesystem").toBeDefined();
  expect(others).toEqual([]);
  expect(wb.sidecars().map((info) => info.pid)).toContain(tree?.ppid);

  // Taking beta back in "MCP: Manage Shared Folders" reaches that one server.
  const mark = log.mark();
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.quickTitle).toContainText("MCP Host Bridge: Folders Shared with “files”");
  await setChecked(wb, { beta: false });
  await wb.quickAccept();
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("1");
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
  // Still one server-filesystem (the sidecar may restart it with the narrower folders), and VS Code's session,
  // the same attach process, is on it.
  expect(treeRoots(wb.processesRunning(SERVER_FILESYSTEM))).toHaveLength(1);
  expect(isRunning(attach), "VS Code's host_bridge attach").toBe(true);
  await wb.runCommand("MCP: List Servers");
  await expect(wb.quickRow(LABEL)).toContainText("Running");
  await wb.page.keyboard.press("Escape");
  expect(gatewaySessions(wb.server).filter((entry) => entry.event === "attached" && entry.server === FILES)).toHaveLength(1);
});

test("a .vscode/mcp.json server VS Code could also start is pointed out once per workspace, naming MCP Host Bridge", async ({ folders, openEditor }) => {
  writeWorkspaceServers(folders.alpha, { repo: { type: "stdio", command: "node", args: [SERVER_FILESYSTEM] } });
  const wb = await openEditor({ servers: {}, vsCodeMcp: true });
  const log = new ServerLog(wb.server, "repo");
  await wb.waitForDialog(trustQuestion("repo"));
  await wb.pressDialogButton("Trust and Start");
  await wb.waitForDialog(folderQuestion("repo"));
  await wb.pressDialogButton("Don't Share");
  await log.waitForLine(/Secure MCP Filesystem Server running on stdio/);
  skipWithoutApi(wb);

  const toast = wb.toasts.locator(".notification-toast", { hasText: NOTICE });
  await expect(toast).toContainText("bypasses per-folder consent");
  await expect(toast).toContainText("VS Code also lists “repo (MCP Host Bridge)”");
  await expect(toast).toContainText("Disable (Workspace)");
  await wb.screenshot("vscode-mcp-notice");
  // Its button opens VS Code's installed MCP servers, where "Disable (Workspace)" hands VS Code's copy over:
  // VS Code's list then shows its copy disabled and host_bridge's beside it.
  await toast.getByRole("button", { name: "Show VS Code's MCP Servers" }).click();
  const installed = wb.page
    .locator(".part.sidebar .pane")
    .filter({ has: wb.page.locator(".pane-header", { hasText: "MCP Servers - Installed" }) });
  await installed.locator(".monaco-list-row", { hasText: "repo" }).click({ button: "right" });
  await wb.page.locator(".context-view .action-label", { hasText: /^Disable \(Workspace\)$/ }).click();
  await wb.runCommand("MCP: List Servers");
  await expect(wb.quickRow(/^repo$/)).toContainText("Disabled");
  await expect(wb.quickRow(/^repo$/)).toContainText("alpha/.vscode/mcp.json");
  await expect(wb.quickRow("repo (MCP Host Bridge)")).toContainText("MCP Host Bridge");
  await wb.screenshot("vscode-mcp-handover");
  await wb.page.keyboard.press("Escape");

  // Not again in this workspace: after a reload the server runs again and nothing is said.
  const mark = log.mark();
  const extensionMark = extensionLogLength(wb.server);
  await wb.reload();
  await log.waitForLine(/Secure MCP Filesystem Server running on stdio/, mark);
  await expect(wb.status).toHaveText(/MCP 1/);
  const said = wb.server.extensionLog().split("\n").slice(extensionMark).filter((line) => line.includes(NOTICE_TEXT));
  expect(said).toEqual([]);
  await expect(wb.page.locator(".notification-toast", { hasText: NOTICE })).toHaveCount(0);
});
