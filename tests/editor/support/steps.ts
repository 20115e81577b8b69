// Multi-step things a person does in these scenarios, written once.
import { expect } from "@playwright/test";
import { type Workbench, escapeRegExp } from "./workbench";

/**
 * The question of the folder dialog for `serverId` when several folders are asked about, with or without the
 * sidecar's reason before it ("MCP Host Bridge: The sandbox refused the server …. Share folders with …?").
 */
export function folderQuestion(serverId: string): RegExp {
  return new RegExp(`MCP Host Bridge: (?:[^\\n]* )?[Ss]hare folders with the MCP server “${escapeRegExp(serverId)}”\\?`);
}

/** The question of the trust dialog for the workspace-defined `serverId`. */
export function trustQuestion(serverId: string): RegExp {
  return new RegExp(`MCP Host Bridge: trust and start the MCP server “${escapeRegExp(serverId)}” defined by this workspace\\?`);
}

/**
 * Answer the first folder prompt of `serverId` (two folders) by checking the folders as `share` says,
 * remembered ("Allow"); the folders left unchecked are remembered as not shared.
 */
export async function shareOnly(wb: Workbench, serverId: string, share: Readonly<Record<string, boolean>>): Promise<void> {
  await wb.waitForDialog(folderQuestion(serverId));
  await wb.pressDialogButton("Choose Folders…");
  await expect(wb.quickTitle).toContainText(`MCP Host Bridge: Share Folders with “${serverId}” (1/2)`);
  await setChecked(wb, share);
  await wb.quickAccept();
  await expect(wb.quickTitle).toContainText("(2/2)");
  await wb.quickRow(/^Allow$/).click();
  await expect(wb.quickInput).toBeHidden();
}

/** In the visible multi-select folder picker, check or uncheck the folders named in `wanted`. */
export async function setChecked(wb: Workbench, wanted: Readonly<Record<string, boolean>>): Promise<void> {
  for (const [name, checked] of Object.entries(wanted)) {
    const box = wb.folderCheckbox(name);
    if ((await box.isChecked()) !== checked) {
      await box.click();
    }
    await expect(box, `the checkbox of ${name}`).toBeChecked({ checked });
  }
}

/**
 * Answer modal prompts that may come in any order: each handler runs once, for the first dialog matching its
 * pattern, and is given the dialog's text; returns when every handler ran.
 */
export async function answerPrompts(
  wb: Workbench,
  handlers: readonly (readonly [RegExp, (text: string) => Promise<void>])[],
): Promise<void> {
  const pending = [...handlers];
  while (pending.length > 0) {
    const anyPending = new RegExp(pending.map(([pattern]) => `(?:${pattern.source})`).join("|"));
    const text = await wb.waitForDialog(anyPending);
    const index = pending.findIndex(([pattern]) => pattern.test(text));
    const [handler] = index < 0 ? [] : pending.splice(index, 1);
    if (handler === undefined) {
      throw new Error(`no handler for the dialog: ${text}`);
    }
    await handler[1](text);
  }
}
