// "MCP: Pick Resource" opened while servers are still coming up: each server without resources says why in a row
// of its own (starting, awaiting trust, no resources capability, failed with its reason), a server that starts
// later fills in while the picker stays open, and picking a server's row opens the status, which says why that
// server has no resources. (A question that comes while a picker is open waits for it: settings.spec.ts.)
import { writeFileSync } from "node:fs";
import path from "node:path";
import { writeWorkspaceServers } from "../support/folders";
import { expect, test, workspaceServer } from "../support/fixtures";
import { PYTHON, RESOURCES_SERVER, SERVER_EVERYTHING } from "../support/paths";
import { ServerLog } from "../support/serverLog";
import { answerPrompts, folderQuestion, trustQuestion } from "../support/steps";

/** What the pinned server-everything lists: 7 documents and 2 templates. */
const EVERYTHING_ROWS = 9;

test("Pick Resource opened while servers start says why each has no resources and fills in as they come up", async ({ folders, openEditor }) => {
  writeWorkspaceServers(folders.alpha, { workspace: workspaceServer() });
  // server-everything, held back until the test writes the flag file: it is "starting" until then.
  const flag = path.join(folders.root, "late-may-start");
  const late = { type: "stdio", command: "sh", args: ["-c", 'while [ ! -e "$0" ]; do sleep 0.1; done; exec node "$1" stdio', flag, SERVER_EVERYTHING] } as const;
  const wb = await openEditor({
    servers: {
      late,
      tools: { type: "stdio", command: PYTHON, args: [RESOURCES_SERVER, "--fault", "no-resources"] },
      missing: { type: "stdio", command: path.join(folders.root, "no-such-server"), args: [] },
    },
  });
  // The workspace's server is left waiting for trust (Cancel decides nothing); tools and late share nothing (late
  // is asked about while it starts: the question names only its configuration).
  await answerPrompts(wb, [
    [trustQuestion("workspace"), () => wb.pressDialogButton("Cancel")],
    [folderQuestion("tools"), () => wb.pressDialogButton("Don't Share")],
    [folderQuestion("late"), () => wb.pressDialogButton("Don't Share")],
  ]);
  await expect(wb.status).toHaveText(/MCP 1\/4 · starting late…/);

  await wb.runCommand("MCP: Pick Resource");
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Pick Resource");
  // Held back longer than the handshake time-out, it is restarted: "restarting" then.
  await expect(wb.quickRow(/“late” is (starting|restarting): its resources are listed once it runs/)).toBeVisible();
  await expect(wb.quickRow("“tools” offers no resources: it does not declare the resources capability")).toBeVisible();
  await expect(wb.quickRow(/“missing” failed, so it offers no resources: .+/)).toBeVisible();
  await expect(wb.quickRow("“workspace” waits for your trust: it is not started, so it offers no resources until you trust it")).toBeVisible();
  await expect(wb.quickInput.locator("input.input")).toHaveAttribute("placeholder", "No resources to show yet; the rows below say why.");
  await wb.screenshot("picker-servers-starting");

  // late comes up while the picker is open: its resources fill in, under its name, and its row goes.
  writeFileSync(flag, "");
  await new ServerLog(wb.server, "late").waitForLine(/Starting default \(STDIO\) server/);
  const groups = await wb.quickGroups((found) => found.get("late")?.length === EVERYTHING_ROWS);
  expect(groups.get("late")).toEqual(expect.arrayContaining(["architecture.md", "how-it-works.md", "Dynamic Text Resource"]));
  await expect(wb.quickRow(/“late” is/)).toHaveCount(0);
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: Pick Resource");

  // Picking a server's row opens the status, which says why it has no resources.
  await wb.quickRow("“tools” offers no resources").click();
  await expect(wb.quickTitle).toHaveText("MCP Host Bridge: MCP Server Status");
  await expect(wb.quickRow("tools")).toContainText("no resources");
  await expect(wb.quickRow("tools")).toContainText("offers no resources: it does not declare the resources capability");
  await expect(wb.quickRow("workspace")).toContainText("waits for your trust");
  await expect(wb.dialog).toBeHidden();
  await wb.page.keyboard.press("Escape");
  await expect(wb.status).toHaveText(/MCP 2\/4 · no folders shared/);
});
