// Consent in a real VS Code: the first prompt for a user-level server, then "MCP: Manage Shared Folders".
// Each step is checked on screen and on what server-filesystem itself reports about the roots it was sent.
import { pathToFileURL } from "node:url";
import { SERVER_FILESYSTEM } from "../support/paths";
import { FILESYSTEM_ROOTS, ServerLog } from "../support/serverLog";
import { auditedAnswers, expect, filesystemServer, test } from "../support/fixtures";
import { setChecked, shareOnly } from "../support/steps";
import type { Workbench } from "../support/workbench";

const FILES = "files";

/** The roots the sidecar last sent to `server`, as file URIs. */
function lastRootsSent(wb: Workbench, server: string): readonly string[] | undefined {
  return auditedAnswers(wb.server).filter((answer) => answer.server === server).at(-1)?.roots;
}

function folderUri(folder: string): string {
  return pathToFileURL(folder).href;
}

test("allowing one of two folders shares exactly that folder with server-filesystem", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);

  const dialog = await wb.waitForDialog(/Share folders with the MCP server “files”\?/);
  expect(dialog).toContain(`Command: node ${SERVER_FILESYSTEM}`);
  expect(dialog).toContain(folders.alpha);
  expect(dialog).toContain(folders.beta);
  await wb.screenshot("consent-dialog");
  // Nothing is shared while the question is open.
  await log.waitForLine(/No valid root directories provided by client/);

  await wb.pressDialogButton("Choose Folders…");
  await expect(wb.quickTitle).toContainText("Share Folders with “files” (1/2)");
  // Both workspace folders start checked.
  await expect(wb.folderCheckbox("alpha")).toBeChecked();
  await expect(wb.folderCheckbox("beta")).toBeChecked();
  await setChecked(wb, { beta: false });
  await wb.screenshot("consent-folders");
  await wb.quickAccept();
  await expect(wb.quickTitle).toContainText("(2/2)");
  await wb.quickRow(/^Allow$/).click();

  const reported = await log.waitForLine(FILESYSTEM_ROOTS);
  expect(reported[1]).toBe("1");
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
});

test("Manage Shared Folders shares a second folder and takes it back", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);
  await shareOnly(wb, FILES, { alpha: true, beta: false });
  await log.waitForLine(FILESYSTEM_ROOTS);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);

  let mark = log.mark();
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.quickTitle).toContainText("Folders Shared with “files”");
  await expect(wb.folderCheckbox("alpha")).toBeChecked();
  await expect(wb.folderCheckbox("beta")).not.toBeChecked();
  await setChecked(wb, { beta: true });
  await wb.quickAccept();
  await wb.quickRow(/^Allow$/).click();
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("2");
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha), folderUri(folders.beta)]);
  await expect(wb.status).toHaveText(/MCP 1 · 2 folders shared/);

  mark = log.mark();
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.folderCheckbox("beta")).toBeChecked();
  await setChecked(wb, { beta: false });
  await wb.quickAccept();
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("1");
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
});
