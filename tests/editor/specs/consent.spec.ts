// Consent in a real VS Code: the trust prompt (Enter trusts nothing, and that answer holds after a window reload),
// the first folder prompt for a user-level server, what Enter does, the memory of a folder left unchecked across a
// window reload (for that server only), "MCP: Manage Shared Folders", and a folder seen through a shared parent.
// Each step is checked on screen and on what server-filesystem itself reports about the roots it was sent (its
// stderr) or what the sidecar sent it (the audit log). That a prompt never closes an open picker is in
// settings.spec.ts (the status picker) and picker.spec.ts (Pick Resource).
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { SERVER_FILESYSTEM } from "../support/paths";
import { writeWorkspaceServers } from "../support/folders";
import { FILESYSTEM_ROOTS, ServerLog, extensionLogLength, filesystemRoots } from "../support/serverLog";
import { auditedAnswers, expect, filesystemServer, test } from "../support/fixtures";
import { answerPrompts, folderQuestion, setChecked, shareOnly, trustQuestion } from "../support/steps";
import type { Workbench } from "../support/workbench";

const FILES = "files";
/** What server-filesystem says when the roots it fetched hold no folder. */
const NO_ROOTS = /No valid root directories provided by client/;

/** The roots the sidecar last sent to `server`, as file URIs. */
function lastRootsSent(wb: Workbench, server: string): readonly string[] | undefined {
  return auditedAnswers(wb.server).filter((answer) => answer.server === server).at(-1)?.roots;
}

/** Every roots answer the sidecar gave `server`. */
function rootsSent(wb: Workbench, server: string): (readonly string[])[] {
  return auditedAnswers(wb.server)
    .filter((answer) => answer.server === server)
    .map((answer) => answer.roots);
}

function folderUri(folder: string): string {
  return pathToFileURL(folder).href;
}

/** How many pixels the visible quick input's placeholder is wider than its box (not more than 0: shown whole). */
function placeholderOverflow(wb: Workbench): Promise<number> {
  return wb.quickInput.locator("input.input").evaluate((input: HTMLInputElement) => {
    const context = document.createElement("canvas").getContext("2d");
    const style = getComputedStyle(input);
    if (context === null) {
      throw new Error("no canvas to measure the placeholder with");
    }
    context.font = `${style.fontSize} ${style.fontFamily}`;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return context.measureText(input.placeholder).width - room;
  });
}

/** The extension's log lines after the first `since`. */
function extensionLines(wb: Workbench, since: number): string[] {
  return wb.server.extensionLog().split("\n").slice(since);
}

test("the trust prompt names MCP Host Bridge and the executable that will run, not the secret values", async ({ folders, openEditor }) => {
  const mcpJson = writeWorkspaceServers(folders.alpha, {
    repo: {
      type: "stdio",
      command: "node",
      args: [SERVER_FILESYSTEM],
      env: { NODE_OPTIONS: "--no-deprecation", API_TOKEN: "s3cret-value" },
    },
  });
  const wb = await openEditor({ servers: {} });
  const log = new ServerLog(wb.server, "repo");

  const text = await wb.waitForDialog(trustQuestion("repo"));
  await wb.screenshot("trust-dialog");
  expect(text).toContain(`Defined in: ${mcpJson}`);
  // What will confine it, before it ever ran: the sidecar says what its first start gets on this machine.
  expect(text).toContain(
    "Sandboxed: Linux Landlock confines it, so it will be able to read and change only the folders you then choose",
  );
  expect(text).not.toContain("with your permissions");
  expect(text).toContain(`Command: node ${SERVER_FILESYSTEM}`);
  expect(text).toContain("Environment it sets: API_TOKEN, NODE_OPTIONS=--no-deprecation");
  expect(text).not.toContain("s3cret-value");
  const executable = /^Executable: (\/.+)$/m.exec(text)?.[1];
  expect(executable, "the trust prompt's executable line").toBeDefined();
  // The default button (Enter) is the one that does not start anything.
  await expect(wb.dialog.getByRole("button", { name: "Don't Trust", exact: true })).toBeFocused();
  expect(wb.processesRunning(SERVER_FILESYSTEM)).toEqual([]);

  await wb.pressDialogButton("Trust and Start");
  await wb.waitForDialog(/MCP Host Bridge: share folders with the MCP server “repo”\?/);
  await wb.pressDialogButton("Don't Share");
  await log.waitForLine(/Secure MCP Filesystem Server running on stdio/);
  // The program that runs is the one the prompt named.
  const [server] = wb.processesRunning(SERVER_FILESYSTEM);
  expect(server, "a running server-filesystem").toBeDefined();
  expect(realpathSync(`/proc/${server?.pid}/exe`)).toBe(realpathSync(executable ?? ""));
  expect(readFileSync(`/proc/${server?.pid}/environ`, "utf8").split("\0")).toContain("API_TOKEN=s3cret-value");
  expect(rootsSent(wb, "repo").flat()).toEqual([]);
});

test("pressing Enter on the trust prompt starts nothing, and after a window reload the server stays stopped without asking again", async ({ folders, openEditor }) => {
  writeWorkspaceServers(folders.alpha, { repo: { type: "stdio", command: "node", args: [SERVER_FILESYSTEM] } });
  const wb = await openEditor({ servers: {} });

  await wb.waitForDialog(trustQuestion("repo"));
  await expect(wb.dialog.getByRole("button", { name: "Don't Trust", exact: true })).toBeFocused();
  await wb.page.keyboard.press("Enter");
  await expect(wb.dialog).toBeHidden();
  await expect(wb.status).toHaveText(/MCP 0\/1 · no folders shared/);
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickRow("repo")).toContainText("you did not trust this workspace-defined server; it is not started");
  await wb.page.keyboard.press("Escape");
  expect(wb.processesRunning(SERVER_FILESYSTEM)).toEqual([]);
  expect(rootsSent(wb, "repo")).toEqual([]);

  // The answer was remembered: a new window's sidecar holds the server stopped and asks nothing.
  const extensionMark = extensionLogLength(wb.server);
  await wb.reload();
  await expect(wb.status).toHaveText(/MCP 0\/1 · no folders shared/);
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickRow("repo")).toContainText("you did not trust this workspace-defined server; it is not started");
  await wb.page.keyboard.press("Escape");
  await expect(wb.dialog).toBeHidden();
  expect(extensionLines(wb, extensionMark).filter((line) => line.includes("consent: asking"))).toEqual([]);
  expect(wb.processesRunning(SERVER_FILESYSTEM)).toEqual([]);
});

test("the folder dialog checks nothing and pressing Enter twice shares nothing", async ({ openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);

  const dialog = await wb.waitForDialog(folderQuestion(FILES));
  expect(dialog).toContain("Choose Folders…: check the folders to share; none is checked to begin with.");
  expect(dialog).toContain("Don't Share: share none of them with this server, and don't ask again.");
  expect(dialog).toContain("Cancel: decide later; nothing is shared now");
  await expect(wb.dialog.getByRole("button", { name: "Choose Folders…", exact: true })).toBeFocused();
  await wb.page.keyboard.press("Enter");

  await expect(wb.quickTitle).toContainText("MCP Host Bridge: Share Folders with “files” (1/2)");
  await expect(wb.folderCheckbox("alpha")).not.toBeChecked();
  await expect(wb.folderCheckbox("beta")).not.toBeChecked();
  await wb.screenshot("consent-folders");
  await wb.page.keyboard.press("Enter");
  await expect(wb.quickInput).toBeHidden();

  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);
  await log.waitForLine(NO_ROOTS);
  expect(log.lines().filter((line) => FILESYSTEM_ROOTS.test(line))).toEqual([]);
  expect(rootsSent(wb, FILES).length).toBeGreaterThan(0);
  expect(rootsSent(wb, FILES).flat()).toEqual([]);

  // Both were answered "not shared", and that is what Manage Shared Folders shows.
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.quickTitle).toContainText("MCP Host Bridge: Folders Shared with “files”");
  await expect(wb.folderCheckbox("alpha")).not.toBeChecked();
  await expect(wb.folderCheckbox("beta")).not.toBeChecked();
  await wb.page.keyboard.press("Escape");
  await expect(wb.quickInput).toBeHidden();
});

test("checking one of two folders shares exactly that folder with server-filesystem", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);

  const dialog = await wb.waitForDialog(folderQuestion(FILES));
  expect(dialog).toContain(`Command: node ${SERVER_FILESYSTEM}`);
  expect(dialog).toMatch(/^Executable: \/.*node$/m);
  expect(dialog).toContain(folders.alpha);
  expect(dialog).toContain(folders.beta);
  expect(dialog).toContain(
    "Sandboxed: Linux Landlock confines it, so it will be able to read and change only the folders you share with it",
  );
  await wb.screenshot("consent-dialog");
  // Nothing is shared while the question is open.
  await log.waitForLine(NO_ROOTS);

  await wb.pressDialogButton("Choose Folders…");
  await expect(wb.quickTitle).toContainText("MCP Host Bridge: Share Folders with “files” (1/2)");
  // The placeholder shows whole, even in a window as narrow as 1 400 pixels.
  await wb.page.setViewportSize({ width: 1400, height: 960 });
  expect(await placeholderOverflow(wb)).toBeLessThanOrEqual(0);
  await setChecked(wb, { alpha: true });
  await wb.quickAccept();
  await expect(wb.quickTitle).toContainText("(2/2)");
  await wb.quickRow(/^Allow$/).click();

  const reported = await log.waitForLine(FILESYSTEM_ROOTS);
  expect(reported[1]).toBe("1");
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
});

test("one folder is shared in one step from the dialog, whose default shares nothing", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() }, folder: "alpha" });
  const log = new ServerLog(wb.server, FILES);

  const dialog = await wb.waitForDialog(/MCP Host Bridge: share the folder “alpha” with the MCP server “files”\?/);
  expect(dialog).toContain("Share “alpha”: share it with this server until you change that.");
  expect(dialog).toContain("Share for This Session: share it until the host bridge or VS Code restarts.");
  expect(dialog).toContain("Read Only…: share it read only");
  expect(dialog).toContain("Sandboxed: Linux Landlock confines it");
  await expect(wb.dialog.getByRole("button", { name: "Don't Share", exact: true })).toBeFocused();
  await expect(wb.dialog.getByRole("button", { name: "Choose Folders…", exact: true })).toHaveCount(0);
  await wb.screenshot("consent-one-folder");
  await wb.pressDialogButton("Share “alpha”");

  // No list, no second step: the server gets alpha.
  await expect(wb.dialog).toBeHidden();
  await expect(wb.quickInput).toBeHidden();
  expect((await log.waitForLine(FILESYSTEM_ROOTS))[1]).toBe("1");
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
});

test("a folder left unchecked stays unshared and is not asked about again after a window reload", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);
  await shareOnly(wb, FILES, { alpha: true, beta: false });
  expect((await log.waitForLine(FILESYSTEM_ROOTS))[1]).toBe("1");

  const mark = log.mark();
  const extensionMark = extensionLogLength(wb.server);
  await wb.reload();
  // A new sidecar and server-filesystem: alpha again, beta not, and nobody asked.
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("1");
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  expect(rootsSent(wb, FILES).flat()).not.toContain(folderUri(folders.beta));
  await expect(wb.dialog).toBeHidden();
  expect(extensionLines(wb, extensionMark).filter((line) => line.includes("consent: asking"))).toEqual([]);

  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.folderCheckbox("alpha")).toBeChecked();
  await expect(wb.folderCheckbox("beta")).not.toBeChecked();
  await wb.page.keyboard.press("Escape");
  await expect(wb.quickInput).toBeHidden();
});

test("a folder left unchecked is remembered for that server only: another server whose question was put off is asked again after a reload", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer(), other: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);
  await answerPrompts(wb, [
    [folderQuestion(FILES), () => shareOnly(wb, FILES, { alpha: true, beta: false })],
    [folderQuestion("other"), () => wb.pressDialogButton("Cancel")],
  ]);
  expect((await log.waitForLine(FILESYSTEM_ROOTS))[1]).toBe("1");

  const mark = log.mark();
  const extensionMark = extensionLogLength(wb.server);
  await wb.reload();
  // "other" decided nothing, so it is asked about both folders again, beta included; files is not asked.
  const again = await wb.waitForDialog(folderQuestion("other"));
  expect(again).toContain(folders.alpha);
  expect(again).toContain(folders.beta);
  await wb.pressDialogButton("Don't Share");
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("1");
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  expect(lastRootsSent(wb, "other")).toEqual([]);
  expect(extensionLines(wb, extensionMark).filter((line) => line.includes("consent: asking"))).toEqual([
    expect.stringContaining("for the MCP server “other”"),
  ]);

  await wb.runCommand("MCP: Manage Shared Folders");
  await wb.quickRow(/^files$/).click();
  await expect(wb.quickTitle).toContainText("MCP Host Bridge: Folders Shared with “files”");
  await expect(wb.folderCheckbox("alpha")).toBeChecked();
  await expect(wb.folderCheckbox("beta")).not.toBeChecked();
  await wb.page.keyboard.press("Escape");
  await expect(wb.quickInput).toBeHidden();
});

test("Manage Shared Folders shares a second folder and takes it back", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);
  await shareOnly(wb, FILES, { alpha: true, beta: false });
  await log.waitForLine(FILESYSTEM_ROOTS);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);

  let mark = log.mark();
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.quickTitle).toContainText("MCP Host Bridge: Folders Shared with “files”");
  await expect(wb.folderCheckbox("alpha")).toBeChecked();
  await expect(wb.folderCheckbox("beta")).not.toBeChecked();
  await setChecked(wb, { beta: true });
  await wb.quickAccept();
  await wb.quickRow(/^Allow$/).click();
  await log.waitForLine(filesystemRoots(2), mark);
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha), folderUri(folders.beta)]);
  await expect(wb.status).toHaveText(/MCP 1 · 2 folders shared/);

  mark = log.mark();
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.folderCheckbox("beta")).toBeChecked();
  await setChecked(wb, { beta: false });
  await wb.quickAccept();
  await log.waitForLine(filesystemRoots(1), mark);
  expect(lastRootsSent(wb, FILES)).toEqual([folderUri(folders.alpha)]);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
  await expect(wb.toasts).toContainText("MCP Host Bridge: MCP server “files”: no longer sharing “beta”.");
});

test("a folder inside a shared one shows as visible through it, and unchecking it offers to unshare the parent", async ({ folders, openEditor }) => {
  const ui = path.join(folders.alpha, "packages", "ui");
  mkdirSync(ui, { recursive: true });
  writeFileSync(path.join(ui, "package.json"), JSON.stringify({ name: "ui", version: "1.0.0" }));
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);

  // Decide later; then share alpha alone from Manage Shared Folders.
  const first = await wb.waitForDialog(folderQuestion(FILES));
  expect(first).toContain(ui);
  await wb.pressDialogButton("Cancel");
  await wb.runCommand("MCP: Manage Shared Folders");
  await setChecked(wb, { alpha: true });
  await wb.quickAccept();
  await wb.quickRow(/^Allow$/).click();
  expect((await log.waitForLine(FILESYSTEM_ROOTS))[1]).toBe("1");
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);

  // The status picker says ui is seen through alpha.
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  // server-filesystem asked for its roots, so the folder reached it: "shares", with when it asked.
  await expect(wb.quickRow(FILES)).toContainText(/shares alpha — asked for its folders at \d\d:\d\d:\d\d.* · ui visible through alpha/);
  await wb.page.keyboard.press("Escape");

  // After a reload only beta is asked about; ui is listed as already visible through alpha.
  let mark = log.mark();
  await wb.reload();
  const second = await wb.waitForDialog(/MCP Host Bridge: share the folder “beta” with the MCP server “files”\?/);
  expect(second).toContain(`${ui} — visible through “alpha”`);
  await wb.screenshot("consent-visible-through");
  await wb.pressDialogButton("Don't Share");
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("1");

  // Unchecking ui in Manage Shared Folders offers to stop sharing alpha, which is what makes it visible.
  mark = log.mark();
  await wb.runCommand("MCP: Manage Shared Folders");
  await expect(wb.folderRow("ui")).toContainText("visible through “alpha”");
  await expect(wb.folderCheckbox("ui")).toBeChecked();
  await setChecked(wb, { ui: false });
  await wb.quickAccept();
  const offer = await wb.waitForDialog(/MCP Host Bridge: “ui” stays visible to the MCP server “files” through “alpha”\. Stop sharing “alpha”\?/);
  expect(offer).toContain(`“alpha” (${folders.alpha}) is shared with “files”, and “ui” is inside it`);
  await wb.screenshot("unshare-parent");
  await wb.pressDialogButton("Stop Sharing “alpha”");

  // server-filesystem is restarted with no roots (it would keep old ones if told the list is empty).
  await log.waitForLine(NO_ROOTS, mark);
  expect(lastRootsSent(wb, FILES)).toEqual([]);
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);
  await expect(wb.toasts).toContainText("no longer sharing “ui”, “alpha”");
});
