// The first minutes with the extension: the status bar never says "no servers" while the host bridge is still reading
// its server configurations, a server whose process is starting shows as progress, and with no server configured the
// status picker offers "Add a server…", which opens the user settings at hostBridge.servers.
import { expect, test } from "../support/fixtures";
import { SERVER_FILESYSTEM } from "../support/paths";
import { folderQuestion } from "../support/steps";
import type { Workbench } from "../support/workbench";

/** Record every text the extension's status bar item shows from now on; read them with {@link statusTexts}. */
async function recordStatusTexts(wb: Workbench): Promise<void> {
  await wb.page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { hbStatusTexts: string[] }).hbStatusTexts = seen;
    const look = (): void => {
      const item = document.getElementById("host-bridge.host-bridge.hostBridge.status");
      const text = item?.textContent?.trim() ?? "";
      if (text !== "" && seen.at(-1) !== text) {
        seen.push(text);
      }
    };
    new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true });
    look();
  });
}

function statusTexts(wb: Workbench): Promise<string[]> {
  return wb.page.evaluate(() => (window as unknown as { hbStatusTexts: string[] }).hbStatusTexts);
}

test("the status bar says “MCP starting…”, never “no servers”, until the configured server is known", async ({ openEditor }) => {
  const wb = await openEditor({ servers: { files: { type: "stdio", command: "node", args: [SERVER_FILESYSTEM] } } });
  await recordStatusTexts(wb);
  await wb.waitForDialog(folderQuestion("files"));
  await wb.pressDialogButton("Don't Share");
  await expect(wb.status).toHaveText(/MCP 1 · no folders shared/);
  const texts = await statusTexts(wb);
  expect(texts.filter((text) => text.includes("no servers"))).toEqual([]);
  expect(texts).toContain("MCP starting…");
});

test("with no server configured, “Add a server…” in the status picker opens the user settings at hostBridge.servers", async ({ openEditor }) => {
  const wb = await openEditor({ servers: {} });
  await expect(wb.status).toHaveText(/MCP · no servers/);
  await wb.runCommand("MCP: Show Server Status");
  await expect(wb.quickInput.locator("input.input")).toHaveAttribute(
    "placeholder",
    "No MCP server is configured yet: add one in your settings or in .vscode/mcp.json",
  );
  await wb.quickRow("Add a server…").click();
  // code-server 4.139 opens settings.json in a tab or, by default, in a modal editor over the window.
  const settings = wb.page.locator(".monaco-editor .view-lines", { hasText: '"hostBridge.servers": {' });
  await expect(settings).toBeVisible();
  await expect(wb.page.getByText("settings.json", { exact: true }).first()).toBeVisible();
});
