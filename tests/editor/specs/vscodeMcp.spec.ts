// VS Code's own MCP support with host_bridge: it lists each server host_bridge runs as "<id> (MCP Host Bridge)"
// and starts it through `host-bridge attach`, which reaches the sidecar's one live connection, so there is one
// server process and the folders the user shares (or stops sharing) are what that server sees. The servers of the
// workspace's .vscode/mcp.json, which VS Code runs as its own copies, are named in one notice whose "Hand Over"
// stops every copy VS Code runs; until then host_bridge's copy is not offered, so VS Code lists, and Browse
// Resources shows, one copy of each.
import { readFileSync } from "node:fs";
import path from "node:path";
import { type CodeServer } from "../support/codeServer";
import { everythingServer, expect, filesystemServer, test } from "../support/fixtures";
import { writeWorkspaceServers } from "../support/folders";
import { SERVER_EVERYTHING, SERVER_FILESYSTEM } from "../support/paths";
import { type ProcessInfo, isRunning } from "../support/processes";
import { FILESYSTEM_ROOTS, ServerLog, extensionLogLength, filesystemRoots } from "../support/serverLog";
import { answerPrompts, folderQuestion, setChecked, shareOnly, trustQuestion } from "../support/steps";
import { type Workbench, waitFor } from "../support/workbench";

const FILES = "files";
const LABEL = `${FILES} (MCP Host Bridge)`;
/** What the extension logs where VS Code has no `registerMcpServerDefinitionProvider`. */
const NO_API = /this VS Code has no MCP server definition API.*/;

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
  await log.waitForLine(filesystemRoots(1), mark);
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

/** The server-filesystem processes VS Code itself runs (children of its extension host, not of the sidecar). */
function vsCodesCopies(wb: Workbench): ProcessInfo[] {
  const sidecars = new Set(wb.sidecars().map((info) => info.pid));
  return treeRoots(wb.processesRunning(SERVER_FILESYSTEM)).filter((info) => !sidecars.has(info.ppid));
}

/** Start VS Code's own copy of `label` from "MCP: List Servers". */
async function startInVsCode(wb: Workbench, label: RegExp): Promise<void> {
  await wb.runCommand("MCP: List Servers");
  await wb.quickRow(label).click();
  await wb.quickRow(/^Start Server$/).click();
  await expect(wb.quickInput).toBeHidden();
}

test("“Hand Over” stops VS Code's own copies of both servers of the workspace file, leaving one process per server", async ({ folders, openEditor }) => {
  writeWorkspaceServers(folders.alpha, {
    fs: { type: "stdio", command: "node", args: [SERVER_FILESYSTEM, "${workspaceFolder}"] },
    fsv: { type: "stdio", command: "node", args: [SERVER_FILESYSTEM, "${hostBridge:sharedFolders}"] },
  });
  const wb = await openEditor({ servers: {}, vsCodeMcp: true });
  await wb.waitForDialog(/MCP Host Bridge: trust and start the 2 MCP servers defined by this workspace file\?/);
  await wb.pressDialogButton("Trust and Start");
  await answerPrompts(wb, [
    [folderQuestion("fs"), () => shareOnly(wb, "fs", { alpha: true, beta: false })],
    [folderQuestion("fsv"), () => shareOnly(wb, "fsv", { alpha: true, beta: false })],
  ]);
  await expect(wb.status).toHaveText(/MCP 2 · 1 folder shared/);
  skipWithoutApi(wb);

  // While VS Code runs its own copies, host_bridge's are not offered to it: its list holds one of each server.
  await wb.runCommand("MCP: List Servers");
  await expect(wb.quickRow(/^fs$/)).toContainText("alpha/.vscode/mcp.json");
  await expect(wb.quickRow(/^fsv$/)).toBeVisible();
  await expect(wb.quickRow(/\(MCP Host Bridge\)/)).toHaveCount(0);
  await wb.page.keyboard.press("Escape");
  // The user starts VS Code's copy of fs: two server-filesystem processes for fs, one outside consent.
  await startInVsCode(wb, /^fs$/);
  await waitFor("VS Code's own copy of fs", () => vsCodesCopies(wb)[0]);
  expect(treeRoots(wb.processesRunning(SERVER_FILESYSTEM))).toHaveLength(3);

  // One notice names both servers and says why fsv cannot start in VS Code; one action hands both over.
  const notice = await wb.notification("VS Code's own MCP support also runs “fs” and “fsv” from alpha/.vscode/mcp.json");
  await expect(notice).toContainText("outside per-folder consent and the sandbox");
  await expect(notice).toContainText("“fsv” cannot start there: VS Code does not fill in ${hostBridge:sharedFolders}");
  await wb.screenshot("vscode-mcp-notice");
  await notice.getByRole("button", { name: "Hand Over" }).click();

  // One process per server, both the sidecar's; VS Code's list shows its copies stopped and host_bridge's beside them.
  await expect.poll(() => vsCodesCopies(wb).length, { message: "VS Code's copy to stop" }).toBe(0);
  const roots = treeRoots(wb.processesRunning(SERVER_FILESYSTEM));
  expect(roots).toHaveLength(2);
  expect(roots.every((info) => wb.sidecars().some((sidecar) => sidecar.pid === info.ppid))).toBe(true);
  await wb.runCommand("MCP: List Servers");
  await expect(wb.quickRow(/^fs$/)).toContainText("Stopped");
  await expect(wb.quickRow(/^fsv$/)).toContainText("Stopped");
  await expect(wb.quickRow("fs (MCP Host Bridge)")).toBeVisible();
  await expect(wb.quickRow("fsv (MCP Host Bridge)")).toBeVisible();
  await wb.screenshot("vscode-mcp-handover");
  await wb.page.keyboard.press("Escape");
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickRow(/^fs$/)).toContainText("handed over");
  await expect(wb.quickRow(/^fsv$/)).toContainText("handed over");
  await wb.page.keyboard.press("Escape");

  // VS Code starts its copy again (as its chat or Browse Resources would): it is stopped again, and the user told.
  await startInVsCode(wb, /^fs$/);
  await wb.notification("VS Code started its own copy of “fs” again");
  await expect.poll(() => vsCodesCopies(wb).length, { message: "VS Code's copy to be stopped again" }).toBe(0);

  // Remembered for the workspace: after a reload nothing is said again, and only host_bridge's copies run.
  const extensionMark = extensionLogLength(wb.server);
  await wb.reload();
  await expect(wb.status).toHaveText(/MCP 2 · 1 folder shared/);
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickRow(/^fs$/)).toContainText("handed over");
  await wb.page.keyboard.press("Escape");
  const said = wb.server.extensionLog().split("\n").slice(extensionMark).filter((line) => line.includes("also runs"));
  expect(said).toEqual([]);
  expect(vsCodesCopies(wb)).toEqual([]);
});

test("MCP: Browse Resources lists each resource once, through host-bridge attach or VS Code's own copy, never both", async ({ folders, openEditor }) => {
  writeWorkspaceServers(folders.alpha, { docs: { type: "stdio", command: "node", args: [SERVER_EVERYTHING, "stdio"] } });
  const wb = await openEditor({ servers: { every: everythingServer() }, vsCodeMcp: true });
  await answerPrompts(wb, [
    [trustQuestion("docs"), () => wb.pressDialogButton("Trust and Start")],
    [folderQuestion("docs"), () => wb.pressDialogButton("Don't Share")],
    [folderQuestion("every"), () => wb.pressDialogButton("Don't Share")],
  ]);
  await expect(wb.status).toHaveText(/MCP 2 · no folders shared/);
  skipWithoutApi(wb);

  // “every” (user settings) only through host-bridge attach; “docs” only as VS Code's own copy, since host_bridge's
  // is not offered while VS Code runs its own: every resource once under each server.
  const rows = await browseResources(wb);
  expect(new Set(rows.map((row) => row.group))).toEqual(new Set(["docs", "every (MCP Host Bridge)"]));
  for (const group of ["docs", "every (MCP Host Bridge)"]) {
    expect(rows.filter((row) => row.group === group).map((row) => row.label)).toEqual(
      expect.arrayContaining(EVERYTHING_RESOURCES),
    );
  }
  expect(duplicates(rows)).toEqual([]);
  await wb.screenshot("vscode-browse-resources");
});

/** What the pinned server-everything lists as resources (its documents and two dynamic ones). */
const EVERYTHING_RESOURCES = ["architecture.md", "how-it-works.md", "Dynamic Text Resource"];

/** "MCP: Browse Resources...": every row once the list stops changing, then closed. */
async function browseResources(wb: Workbench): Promise<{ label: string; group: string }[]> {
  await wb.runCommand("MCP: Browse Resources...");
  await expect(wb.quickRow("architecture.md").first()).toBeVisible();
  let rows: { label: string; group: string }[] = [];
  await expect
    .poll(
      async () => {
        const previous = JSON.stringify(rows);
        rows = await wb.allQuickRows();
        return rows.length > 0 && JSON.stringify(rows) === previous;
      },
      { message: "Browse Resources to list everything", intervals: [1000] },
    )
    .toBe(true);
  await wb.page.keyboard.press("Escape");
  await expect(wb.quickInput).toBeHidden();
  return rows;
}

/** The rows listed more than once under the same server. */
function duplicates(rows: readonly { label: string; group: string }[]): string[] {
  const seen = new Set<string>();
  return rows
    .map((row) => `${row.group}: ${row.label}`)
    .filter((row) => (seen.has(row) ? true : (seen.add(row), false)));
}
