// Settings without a restart: a server added to `hostBridge.servers` starts in the running sidecar (the others keep
// running) and is asked about as it starts, and a consent question waits while one of the extension's pickers is
// open instead of closing it.
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, filesystemServer, test } from "../support/fixtures";
import { ServerLog, waitForExtensionLog } from "../support/serverLog";
import { SERVER_FILESYSTEM } from "../support/paths";
import { writeWorkspaceServers } from "../support/folders";
import { folderQuestion, trustQuestion } from "../support/steps";

const RUNNING = /Secure MCP Filesystem Server running on stdio/;

test("a server added to the settings starts without restarting the host bridge and is asked about as it starts, and a question waits for an open picker", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { files: filesystemServer() } });
  const files = new ServerLog(wb.server, "files");
  await wb.waitForDialog(folderQuestion("files"));
  await wb.pressDialogButton("Don't Share");
  await files.waitForLine(RUNNING);
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);
  const sidecars = wb.sidecars().map((info) => info.pid);
  expect(sidecars).toHaveLength(1);

  // The user adds a server in their settings.json and saves it; it is asked about as it starts.
  const settingsFile = path.join(wb.server.userDataDir, "User", "settings.json");
  const settings = JSON.parse(readFileSync(settingsFile, "utf8")) as Record<string, unknown>;
  settings["hostBridge.servers"] = { files: filesystemServer(), more: filesystemServer() };
  await wb.runCommand("Preferences: Open User Settings (JSON)");
  const editor = wb.page.locator(".monaco-editor .view-lines", { hasText: "hostBridge.servers" });
  await editor.click();
  await wb.page.keyboard.press("ControlOrMeta+A");
  await wb.page.keyboard.insertText(JSON.stringify(settings));
  // The editor closes the brackets and quotes it saw opened; what it added after the text goes.
  await wb.page.keyboard.press("ControlOrMeta+Shift+End");
  await wb.page.keyboard.press("Delete");
  await wb.page.keyboard.press("ControlOrMeta+S");
  await expect.poll(() => serversIn(settingsFile), { message: "settings.json to hold both servers" }).toEqual(settings["hostBridge.servers"]);
  await wb.waitForDialog(folderQuestion("more"));
  await wb.pressDialogButton("Don't Share");
  await new ServerLog(wb.server, "more").waitForLine(RUNNING);
  await expect(wb.status).toHaveText(/MCP 2 · no folders shared/);
  // Close the settings editor (it opens as a modal editor over the workbench).
  await wb.page.keyboard.press("Escape");
  await expect(editor).toBeHidden();

  // With a picker open, a question waits until the picker closes (it would close it): here a server that the
  // workspace's .vscode/mcp.json gains meanwhile, which asks for trust.
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  writeWorkspaceServers(folders.alpha, { third: filesystemServer() });
  await waitForExtensionLog(wb.server, /consent: the question of the MCP server “third” waits until the open picker closes/);
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  await expect(wb.dialog).toBeHidden();

  await wb.page.keyboard.press("Escape");
  await wb.waitForDialog(trustQuestion("third"));
  await wb.pressDialogButton("Cancel");
  await expect(wb.status).toHaveText(/MCP 2\/3 · no folders shared/);
  // Same sidecar; the server that did not change was not restarted.
  expect(wb.sidecars().map((info) => info.pid)).toEqual(sidecars);
  expect(files.lines().filter((line) => RUNNING.test(line))).toHaveLength(1);
});

/** `hostBridge.servers` in a settings file, or its text while it is not JSON (being written, or mistyped). */
function serversIn(file: string): unknown {
  const text = readFileSync(file, "utf8");
  try {
    return (JSON.parse(text) as Record<string, unknown>)["hostBridge.servers"];
  } catch {
    return text;
  }
}
