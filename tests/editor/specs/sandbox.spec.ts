// Consent that binds a server that never asks for roots: under the default OS sandbox (Landlock) a server reading
// the workspace's files at start gets the folder the user shared and is refused the one left unshared, as its own
// stderr says; the status says it was only offered its folder (it never asked) and shows the sandbox.
import path from "node:path";
import { expect, test } from "../support/fixtures";
import { PYTHON, SANDBOX_PROBE } from "../support/paths";
import { ServerLog } from "../support/serverLog";
import { shareOnly } from "../support/steps";
import { escapeRegExp, waitFor } from "../support/workbench";

const PROBE = "probe";

/** How Python reports a refused read on stderr, which the probe logs as is. */
function refused(file: string): RegExp {
  return new RegExp(`^PermissionError: \\[Errno 13\\] Permission denied: '${escapeRegExp(file)}'$`);
}

test("a server that ignores roots reads the shared folder and is refused the unshared one by the sandbox", async ({ folders, openEditor }) => {
  const shared = path.join(folders.alpha, "README.md");
  const unshared = path.join(folders.beta, "README.md");
  // No hostBridge.sandbox in the settings: the default (enforce) applies.
  const wb = await openEditor({
    servers: {
      [PROBE]: { type: "stdio", command: PYTHON, args: [SANDBOX_PROBE, "--startup-read", shared, "--startup-read", unshared] },
    },
  });
  const log = new ServerLog(wb.server, PROBE);

  // Its first start, before any answer, shares nothing: both reads are refused.
  await log.waitForLine(refused(shared));
  await log.waitForLine(refused(unshared));
  const first = await waitFor("the probe's process", () => wb.processesRunning(SANDBOX_PROBE)[0]);
  const mark = log.mark();

  // alpha is checked, beta is left unchecked (remembered as not shared).
  await shareOnly(wb, PROBE, { alpha: true, beta: false });

  // The consent change restarts it in a sandbox that holds alpha: a new process reads alpha and is refused beta.
  // It reads in the order given, so a refusal of alpha would be logged before the refusal of beta.
  await log.waitForLine(refused(unshared), mark);
  const restarted = log.lines().slice(mark);
  const betaAt = restarted.findIndex((line) => refused(unshared).test(line));
  expect(restarted.slice(0, betaAt).filter((line) => line.includes("Permission denied"))).toEqual([]);
  expect(restarted.filter((line) => line.includes(shared))).toEqual([]);
  const second = wb.processesRunning(SANDBOX_PROBE);
  expect(second.map((info) => info.pid)).not.toContain(first.pid);
  // The refusal is said to the user, pointing at where to share the folder.
  await expect(wb.toasts).toContainText(`the sandbox refused the MCP server '${PROBE}' ${unshared}`);
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);

  // The status picker: sandboxed, and alpha only offered (the probe never asks for roots).
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  const row = wb.quickRow(PROBE);
  await expect(row.locator(".label-description")).toHaveText(/^running · \S+ · sandboxed$/);
  await expect(row).toContainText("offered alpha — has not asked for its folders; its sandbox confines it to them");
  await expect(row).not.toContainText("shares");
  await row.click();

  // The server's picker shows the sandbox; picking it shows the whole sentence.
  await expect(wb.quickTitle).toHaveText(`MCP Host Bridge: MCP Server ${PROBE}`);
  const sandbox = wb.quickRow(/^\s*Sandboxed\s*$/);
  await expect(sandbox).toContainText("Sandbox: Linux Landlock");
  await expect(wb.quickRows.first()).toContainText("offered alpha — has not asked for its folders");
  await wb.page.mouse.move(1100, 900);
  await wb.screenshot("status-sandbox");
  await sandbox.click();
  const sentence = await wb.waitForDialog(new RegExp(`MCP Host Bridge: the MCP server “${PROBE}” runs in its OS sandbox\\.`));
  await wb.screenshot("status-sandbox-sentence");
  expect(sentence).toContain(`it can write only the folder you shared, ${folders.alpha}, and its private temp folder`);
  expect(sentence).not.toContain(folders.beta);
  await wb.pressDialogButton("OK");
  await expect(wb.dialog).toBeHidden();
});
