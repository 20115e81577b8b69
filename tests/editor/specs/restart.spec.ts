// The sidecar dies (kill -9): the extension starts a new one, which shares what was allowed before, asks
// nothing again, and shares nothing more.
import { pathToFileURL } from "node:url";
import { auditedAnswers, expect, filesystemServer, test } from "../support/fixtures";
import { FILESYSTEM_ROOTS, ServerLog, extensionLogLength } from "../support/serverLog";
import { shareOnly } from "../support/steps";
import { waitFor } from "../support/workbench";

const FILES = "files";

test("a killed sidecar is restarted with the same shared folder and without asking again", async ({ folders, openEditor }) => {
  const wb = await openEditor({ servers: { [FILES]: filesystemServer() } });
  const log = new ServerLog(wb.server, FILES);
  await shareOnly(wb, FILES, { alpha: true, beta: false });
  expect((await log.waitForLine(FILESYSTEM_ROOTS))[1]).toBe("1");
  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);

  const [sidecar, ...others] = wb.sidecars();
  if (sidecar === undefined) {
    throw new Error("no sidecar runs under this code-server");
  }
  expect(others).toEqual([]);
  const oldFilesystem = wb.processesRunning("server-filesystem").map((info) => info.pid);
  const mark = log.mark();
  const answers = auditedAnswers(wb.server).length;
  const extensionMark = extensionLogLength(wb.server);
  process.kill(sidecar.pid, "SIGKILL");

  // A new sidecar starts a new server-filesystem, which reports the one folder shared before.
  const restarted = await waitFor("a new sidecar", () => wb.sidecars().find((info) => info.pid !== sidecar.pid));
  expect((await log.waitForLine(FILESYSTEM_ROOTS, mark))[1]).toBe("1");
  const newFilesystem = wb.processesRunning("server-filesystem").map((info) => info.pid);
  expect(newFilesystem.some((pid) => !oldFilesystem.includes(pid))).toBe(true);
  const latest = auditedAnswers(wb.server).slice(answers).filter((answer) => answer.server === FILES);
  expect(latest.at(-1)?.roots).toEqual([pathToFileURL(folders.alpha).href]);
  expect(latest.flatMap((answer) => answer.roots)).not.toContain(pathToFileURL(folders.beta).href);

  await expect(wb.status).toHaveText(/MCP 1 · 1 folder shared/);
  // beta was left unchecked, which is remembered as not shared: the new sidecar asks about nothing.
  await expect(wb.dialog).toBeHidden();
  expect(
    wb.server
      .extensionLog()
      .split("\n")
      .slice(extensionMark)
      .filter((line) => line.includes("consent: asking")),
  ).toEqual([]);
  expect(wb.sidecars().map((info) => info.pid)).toEqual([restarted.pid]);
  await wb.screenshot("after-restart");
});
