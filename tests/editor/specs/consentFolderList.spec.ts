// The folder list of the consent dialog, played as a person plays it: a click on a check box, then Enter. Enter
// confirms the list as it is checked (VS Code's check box would otherwise take Enter as "toggle me" and keep the
// list open), and a second click on a box unchecks it again, so nothing is shared. Checked on screen, on what the
// sidecar sent server-filesystem (the audit log), and on the status bar.
import { pathToFileURL } from "node:url";
import { auditedAnswers, expect, filesystemServer, test } from "../support/fixtures";
import { folderQuestion } from "../support/steps";
import type { Workbench } from "../support/workbench";

const FILES = "files";

/** The roots the sidecar last sent to `server`, as file URIs. */
function lastRootsSent(wb: Workbench, server: string): readonly string[] | undefined {
  return auditedAnswers(wb.server).filter((answer) => answer.server === server).at(-1)?.roots;
}

/** Open the folder list of the first question about `FILES` (two folders). */
async function openFolderList(wb: Workbench): Promise<void> {
  // The question follows the sidecar's reading of its server configs, which alone can take half a minute on a
  // loaded machine: wait for that first, then for the dialog, each in its own step.
  await expect(wb.status).toHaveText(/MCP (?!starting)/);
  await wb.waitForDialog(folderQuestion(FILES));
  await wb.pressDialogButton("Choose Folders…");
  await expect(wb.quickTitle).toContainText(`Share Folders with “${FILES}” (1/2)`);
}

/** Click the check box of `name` with the mouse, as a person does, and see it become `checked`. */
async function clickBox(wb: Workbench, name: string, checked: boolean): Promise<void> {
  const box = wb.folderCheckbox(name);
  await box.click();
  await expect(box).toBeChecked({ checked });
  // The focus leaves the box for the list (or its filter box), where Enter confirms; a person's Enter comes later
  // than this.
  await expect(box).not.toBeFocused();
  await expect
    .poll(() => wb.page.evaluate(() => document.activeElement?.matches(".quick-input-widget .monaco-list, .quick-input-widget input")))
    .toBe(true);
}

test("a click on one check box, then Enter, shares exactly that folder", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  await openFolderList(wb);
  await clickBox(wb, "alpha", true);
  await wb.page.keyboard.press("Enter");

  await expect(wb.quickTitle).toContainText("(2/2)");
  await wb.quickRow(/^Allow$/).click();
  await expect(wb.quickInput).toBeHidden();
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
  expect(lastRootsSent(wb, FILES)).toEqual([pathToFileURL(folders.alpha).href]);
});

test("clicks on two check boxes, then Enter, share both folders", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  await openFolderList(wb);
  await clickBox(wb, "alpha", true);
  await clickBox(wb, "beta", true);
  // The second click did not undo the first.
  await expect(wb.folderCheckbox("alpha")).toBeChecked();
  await wb.page.keyboard.press("Enter");

  await expect(wb.quickTitle).toContainText("(2/2)");
  await wb.quickRow(/^Allow$/).click();
  await expect(wb.quickInput).toBeHidden();
  await expect(wb.status).toHaveText(/MCP 1 · 2 folders shared/);
  expect([...(lastRootsSent(wb, FILES) ?? [])].sort()).toEqual(
    [pathToFileURL(folders.alpha).href, pathToFileURL(folders.beta).href].sort(),
  );
});

test("a check box clicked twice is unchecked, and Enter then shares nothing", async ({ openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  await openFolderList(wb);
  await clickBox(wb, "alpha", true);
  await clickBox(wb, "alpha", false);
  await wb.page.keyboard.press("Enter");

  // Confirmed with nothing checked: no second step, nothing shared.
  await expect(wb.quickInput).toBeHidden();
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);
  expect(lastRootsSent(wb, FILES) ?? []).toEqual([]);
});
