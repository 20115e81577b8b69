// Resources in a real VS Code: "MCP: Pick Resource" over server-everything (user settings) and host_bridge's
// workspace server (the workspace's .vscode/mcp.json, trusted in the test), static documents, a template with
// the server's completions, an image and a binary file.
import { readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { PYTHON, SERVER_EVERYTHING, WORKSPACE_SERVER } from "../support/paths";
import { ALPHA_README, LOGO_SIZE, writeWorkspaceServers } from "../support/folders";
import { everythingServer, expect, test, workspaceServer } from "../support/fixtures";
import { ServerLog } from "../support/serverLog";
import { answerPrompts, folderQuestion, shareOnly, trustQuestion } from "../support/steps";
import type { Workbench } from "../support/workbench";

const EVERYTHING = "everything";
const WORKSPACE = "workspace";
/** What the pinned server-everything lists: 7 documents and 2 templates. */
const EVERYTHING_ROWS = 9;
const ARCHITECTURE = readFileSync(path.join(path.dirname(SERVER_EVERYTHING), "docs", "architecture.md"), "utf8");
/** The first line of one of server-everything's documents (`demo://resource/static/document/<name>`). */
function firstLine(name: string): string {
  return readFileSync(path.join(path.dirname(SERVER_EVERYTHING), "docs", name), "utf8").split("\n")[0] ?? "";
}

/**
 * Open the workspace with both servers; trust the workspace server and share alpha (and beta when `beta`)
 * with it, nothing with everything.
 */
async function openWithBothServers(
  folders: { alpha: string },
  openEditor: (options: { servers: Record<string, ReturnType<typeof everythingServer>> }) => Promise<Workbench>,
  beta = false,
): Promise<Workbench> {
  const mcpJson = writeWorkspaceServers(folders.alpha, { [WORKSPACE]: workspaceServer() });
  const wb = await openEditor({ servers: { [EVERYTHING]: everythingServer() } });
  await answerPrompts(wb, [
    [
      trustQuestion(WORKSPACE),
      async (text) => {
        expect(text).toContain(`Defined in: ${mcpJson}`);
        expect(text).toContain(`Command: ${PYTHON} ${WORKSPACE_SERVER}`);
        expect(text).toContain(`Executable: ${PYTHON}`);
        await wb.pressDialogButton("Trust and Start");
        await shareOnly(wb, WORKSPACE, { alpha: true, beta });
      },
    ],
    [folderQuestion(EVERYTHING), () => wb.pressDialogButton("Don't Share")],
  ]);
  await new ServerLog(wb.server, WORKSPACE).waitForLine(beta ? /^workspace-server: 2 roots$/ : /^workspace-server: 1 roots$/);
  await expect(wb.status).toHaveText(beta ? /MCP 2 · 2 folders shared/ : /MCP 2 · 1 folder shared/);
  return wb;
}

test("Pick Resource lists both servers' resources by server and opens a document read-only", async ({ folders, openEditor }) => {
  const wb = await openWithBothServers(folders, openEditor);
  // Tall enough for the picker to show both servers' groups at once in the screenshot.
  await wb.page.setViewportSize({ width: 1280, height: 1280 });

  await wb.runCommand("MCP: Pick Resource");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Pick Resource");
  const groups = await wb.quickGroups(
    (found) => found.get(WORKSPACE)?.length === 2 && found.get(EVERYTHING)?.length === EVERYTHING_ROWS,
  );
  await wb.page.mouse.wheel(0, -100_000);
  await wb.page.mouse.move(1100, 1100);
  await wb.screenshot("resource-picker");
  expect([...groups.keys()]).toEqual([EVERYTHING, WORKSPACE]);
  expect(groups.get(EVERYTHING)).toEqual(
    expect.arrayContaining(["architecture.md", "startup.md", "Dynamic Text Resource", "Dynamic Blob Resource"]),
  );
  expect(groups.get(WORKSPACE)).toEqual(["README.md", "A file inside a shared folder"]);

  // Typing sorts the matches by label and the server separators go: each row names its server instead.
  await wb.quickType("README");
  await expect(wb.quickRow("README.md").locator(".label-description")).toHaveText(/^workspace · text\/markdown/);

  await wb.quickType("architecture");
  await expect(wb.quickRow("architecture.md").locator(".label-description")).toHaveText(/^everything · text\/markdown/);
  await wb.quickRow("architecture.md").click();
  await expect(wb.activeTab).toContainText("architecture.md");
  await expect(wb.editorLines).toContainText(ARCHITECTURE.split("\n")[0] ?? "");
  await wb.screenshot("opened-resource");

  // Typing into it changes nothing and says why.
  await wb.editorLines.click();
  await wb.page.keyboard.type("x");
  await expect(wb.page.locator(".monaco-editor-overlaymessage")).toContainText("MCP resources are read-only: the server owns them.");
  await expect(wb.editorLines).toContainText(ARCHITECTURE.split("\n")[0] ?? "");
  await expect(wb.activeTab).not.toHaveClass(/dirty/);
});

/** Pick the workspace server's file template and fill its `path` with `typed`; the picker stays open. */
async function startFileTemplate(wb: Workbench, typed: string): Promise<void> {
  await wb.runCommand("MCP: Pick Resource");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Pick Resource");
  await wb.quickType("shared folder");
  await wb.quickRow("A file inside a shared folder").click();
  await expect(wb.quickTitle).toContainText("file:///{+path}");
  await wb.quickType(typed);
}

/** The template's `path` for a file in a shared folder (the URI is `file:///{+path}`). */
function templatePath(file: string): string {
  return file.replace(/^\//, "");
}

test("a template asks for its variable with the server's completions and opens the result", async ({ folders, openEditor }) => {
  const wb = await openWithBothServers(folders, openEditor);

  // notes/plan.txt is no listed resource: only the server's completion of the path can offer it.
  await startFileTemplate(wb, templatePath(path.join(folders.alpha, "notes", "p")));
  const suggestion = wb.quickRow(templatePath(path.join(folders.alpha, "notes", "plan.txt")));
  await expect(suggestion).toBeVisible();
  await wb.screenshot("template-completion");
  await suggestion.click();

  await expect(wb.activeTab).toContainText("plan.txt");
  await expect(wb.editorLines).toContainText("Plan: prove it in a real VS Code.");
});

test("an image resource opens in the image preview and a binary one shows its type and size", async ({ folders, openEditor }) => {
  const wb = await openWithBothServers(folders, openEditor);

  await startFileTemplate(wb, templatePath(path.join(folders.alpha, "logo.png")));
  await expect(wb.quickRow(templatePath(path.join(folders.alpha, "logo.png")))).toBeVisible();
  await wb.quickAccept();
  await expect(wb.activeTab).toContainText("logo.png");
  await expect(wb.page.locator("iframe.webview.ready")).toBeVisible();
  // The image preview reports what it decoded: the PNG's dimensions and its byte size.
  const kilobytes = (statSync(path.join(folders.alpha, "logo.png")).size / 1024).toFixed(2);
  await expect(wb.statusItem(`${LOGO_SIZE.width}x${LOGO_SIZE.height}`)).toBeVisible();
  await expect(wb.statusItem(`${kilobytes}KB`)).toBeVisible();
  await wb.screenshot("image-resource");

  await startFileTemplate(wb, templatePath(path.join(folders.alpha, "data.bin")));
  await expect(wb.quickRow(templatePath(path.join(folders.alpha, "data.bin")))).toBeVisible();
  await wb.quickAccept();
  const toast = wb.toasts.locator(".notification-toast", { hasText: "data.bin" });
  await expect(toast).toContainText("data.bin: application/octet-stream, 2.9 KB");
  await expect(toast.getByRole("button", { name: "Save As…" })).toBeVisible();
});

test("an open picker follows a server whose list changed", async ({ folders, openEditor }) => {
  const wb = await openWithBothServers(folders, openEditor, true);
  const log = new ServerLog(wb.server, WORKSPACE);
  await wb.runCommand("MCP: Pick Resource");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Pick Resource");
  const before = await wb.quickGroups(
    (found) => found.get(WORKSPACE)?.length === 3 && found.get(EVERYTHING)?.length === EVERYTHING_ROWS,
  );
  expect(before.get(WORKSPACE)).toEqual(["README.md", "README.md", "A file inside a shared folder"]);

  // beta disappears: the sidecar shares one root less, the server says its list changed, the picker re-lists it.
  const mark = log.mark();
  rmSync(folders.beta, { recursive: true });
  await log.waitForLine(/^workspace-server: 1 roots$/, mark);
  const after = await wb.quickGroups(
    (found) => found.get(WORKSPACE)?.length === 2 && found.get(EVERYTHING)?.length === EVERYTHING_ROWS,
  );
  expect(after.get(WORKSPACE)).toEqual(["README.md", "A file inside a shared folder"]);
  expect(after.get(EVERYTHING)).toEqual(before.get(EVERYTHING));
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Pick Resource");
});

test("Insert Resource puts a resource's text at the cursor", async ({ folders, openEditor }) => {
  const wb = await openWithBothServers(folders, openEditor);
  await wb.runCommand("File: New Untitled Text File");
  await expect(wb.activeTab).toContainText("Untitled-1");
  await wb.editorLines.click();
  await wb.page.keyboard.type("Before: ");

  await wb.runCommand("MCP: Insert Resource");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Insert Resource");
  await wb.quickType("README of alpha");
  await wb.quickRow("README.md").click();
  await expect(wb.editorLines).toContainText(`Before: ${ALPHA_README.split("\n")[0]}`);
  await expect(wb.editorLines).toContainText("The first folder of the editor tests' workspace.");
  await expect(wb.activeTab).toContainText("Untitled-1");
});

test("the MCP Resources view shows each server's resources and opens one", async ({ folders, openEditor }) => {
  const wb = await openWithBothServers(folders, openEditor);
  const view = wb.page.locator(".pane", { has: wb.page.getByRole("heading", { name: "MCP Resources" }) });
  await view.locator(".pane-header").click();
  const tree = view.getByRole("tree");
  await expect(tree.getByRole("treeitem", { name: /^everything/ })).toBeVisible();
  const workspace = tree.getByRole("treeitem", { name: /^workspace/ });
  await expect(workspace).toBeVisible();
  if ((await workspace.getAttribute("aria-expanded")) !== "true") {
    await workspace.click();
  }
  // Named by the resource first (the tooltip starts with the URI), as a screen reader reads it.
  const readme = tree.getByRole("treeitem", { name: /^README\.md, text\/markdown, file:\/\/\/.*\/alpha\/README\.md, README of alpha$/ });
  await readme.click();
  await expect(wb.activeTab).toContainText("README.md");
  await expect(wb.editorLines).toContainText("The first folder of the editor tests' workspace.");
  await wb.screenshot("resources-view");
});

test("a relative link in a Markdown resource opens the resource it names, read from the same server", async ({ openEditor }) => {
  const wb = await openEditor({ servers: { [EVERYTHING]: everythingServer() } });
  await wb.waitForDialog(folderQuestion(EVERYTHING));
  await wb.pressDialogButton("Don't Share");
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);

  await wb.runCommand("MCP: Pick Resource");
  await wb.quickType("how-it-works");
  await wb.quickRow("how-it-works.md").click();
  await expect(wb.activeTab).toContainText("how-it-works.md");
  await expect(wb.editorLines).toContainText(firstLine("how-it-works.md"));

  // Ctrl+click `structure.md` in `[Project Structure](structure.md)` as a person does: point at it, hold Ctrl
  // (the editor underlines the link), click. VS Code's Markdown support makes the link once it has read the
  // document, so try again until a tab opens. Each try starts from the top-left of the document: a click that
  // missed moves the cursor, and the editor may scroll the link sideways or under its sticky first line.
  const link = wb.editorLines.locator("span", { hasText: /^structure\.md$/ }).first();
  await expect(async () => {
    await wb.page.keyboard.press("Control+Home");
    await link.hover();
    await wb.page.keyboard.down("Control");
    await wb.page.mouse.down();
    await wb.page.mouse.up();
    await wb.page.keyboard.up("Control");
    await expect(wb.activeTab).toContainText("structure.md", { timeout: 3_000 });
  }).toPass({ timeout: 45_000 });
  await expect(wb.editorLines).toContainText(firstLine("structure.md"));
  await expect(wb.editorLines).not.toContainText(firstLine("how-it-works.md"));
  await wb.screenshot("relative-link");
});
