// Restricted Mode: a server defined by the workspace's .vscode/mcp.json is not started until the user trusts the
// workspace (only its name is read, so the status can say it waits for workspace trust); servers from the user's
// settings still run.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { PYTHON, SCREENSHOTS, WORKSPACE_SERVER } from "../support/paths";
import { writeWorkspaceServers } from "../support/folders";
import { everythingServer, expect, test, workspaceServer } from "../support/fixtures";
import { ServerLog } from "../support/serverLog";
import { answerPrompts, folderQuestion, trustQuestion } from "../support/steps";

test("in Restricted Mode a workspace-defined server is not started until the workspace is trusted", async ({ folders, openEditor }) => {
  // The workspace server, started through sh so that every start leaves a line in `started`.
  const started = path.join(folders.root, "started");
  const shell = 'echo started >> "$0"; exec "$1" "$2"';
  writeWorkspaceServers(folders.alpha, {
    workspace: { type: "stdio", command: "sh", args: ["-c", shell, started, PYTHON, WORKSPACE_SERVER] },
  });
  // The sandbox is off: the sh wrapper writes `started` outside the workspace folders, which the sandbox refuses.
  const wb = await openEditor({ servers: { everything: everythingServer() }, workspaceTrust: true, sandbox: "off" });

  // VS Code's trust question and the user-level server's folder question are both modal, and either may come first
  // (the extension starts while VS Code's question is pending: servers from the user's settings run in Restricted
  // Mode). The folder question is the only one of ours.
  await answerPrompts(wb, [
    [/Do you trust the authors of the files in this workspace\?/, () => wb.pressDialogButton("No, I don't trust the authors")],
    [folderQuestion("everything"), () => wb.pressDialogButton("Don't Share")],
  ]);
  await expect(wb.statusItem("Restricted Mode")).toBeVisible();
  await new ServerLog(wb.server, "everything").waitForLine(/Starting default \(STDIO\) server/);
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);

  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  const rows = await wb.allQuickRows();
  expect(rows.filter((row) => row.group === "Servers").map((row) => row.label)).toEqual([expect.stringContaining("everything")]);
  expect(rows.filter((row) => row.group === "Waiting for workspace trust").map((row) => row.label)).toEqual(["workspace"]);
  await wb.screenshot("restricted-mode");
  await wb.page.keyboard.press("Escape");
  await expect(wb.dialog).toBeHidden();
  expect(existsSync(started), "the workspace server was started in Restricted Mode").toBe(false);

  // Trusting the workspace makes the same file count: now its server asks for trust, and starts once trusted.
  await wb.statusItem("Restricted Mode").click();
  await wb.page.getByRole("button", { name: "Trust", exact: true }).click();
  await wb.waitForDialog(trustQuestion("workspace"));
  await wb.pressDialogButton("Trust and Start");
  await wb.waitForDialog(folderQuestion("workspace"));
  await wb.pressDialogButton("Don't Share");
  await expect
    .poll(() => (existsSync(started) ? readFileSync(started, "utf8").trim() : "(never started)"), {
      message: "the trusted workspace server starts exactly once",
    })
    .toBe("started");
});

test("in Restricted Mode the status names the workspace's servers that wait for workspace trust", async ({ folders, openEditor }) => {
  writeWorkspaceServers(folders.alpha, { workspace: workspaceServer() });
  const wb = await openEditor({ servers: {}, workspaceTrust: true });
  await wb.waitForDialog(/Do you trust the authors of the files in this workspace\?/);
  await wb.pressDialogButton("No, I don't trust the authors");
  await expect(wb.statusItem("Restricted Mode")).toBeVisible();

  // Not "No MCP servers are configured … add them in .vscode/mcp.json": that file has a server, waiting for trust.
  await expect(wb.status).toHaveText(/MCP · waiting for workspace trust/);
  await wb.status.hover();
  const tooltip = wb.page.locator(".workbench-hover-container").filter({ hasText: "MCP Host Bridge" });
  await expect(tooltip).toContainText(
    "Restricted Mode: “workspace” (alpha/.vscode/mcp.json) waits for workspace trust; trust the workspace to start it",
  );
  await expect(tooltip).not.toContainText("No MCP servers are configured");
  mkdirSync(SCREENSHOTS, { recursive: true });
  await wb.page.screenshot({ path: path.join(SCREENSHOTS, "restricted-tooltip.png") });

  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  const rows = await wb.allQuickRows();
  expect(rows.filter((row) => row.group === "Waiting for workspace trust").map((row) => row.label)).toEqual(["workspace"]);
  await wb.page.keyboard.press("Escape");

  // Pick Resource says the same in a row of its own, instead of an empty list.
  await wb.runCommand("MCP: Pick Resource");
  await expect(wb.quickRow(/Restricted Mode: “workspace” \(alpha\/\.vscode\/mcp\.json\) waits for workspace trust/)).toBeVisible();
  expect(wb.processesRunning(WORKSPACE_SERVER)).toEqual([]);
});
