// Driving the VS Code workbench in the page the way a person does: the command palette, modal dialogs, quick
// picks, the status bar and editors. Every wait is on something visible or on a file, never a fixed sleep.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Locator, type Page, expect } from "@playwright/test";
import type { CodeServer } from "./codeServer";
import { SCREENSHOTS, SLOWDOWN } from "./paths";
import { descendants, type ProcessInfo } from "./processes";

/** How long a step may take on a slow, shared machine before the test fails naming it. */
export const STEP_TIMEOUT = 45_000 * SLOWDOWN;

/** Poll `probe` until it returns a value other than `undefined`; fail naming `what` after `timeout` ms. */
export async function waitFor<T>(what: string, probe: () => T | undefined, timeout = STEP_TIMEOUT): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One browser tab showing one code-server's workbench. */
export class Workbench {
  constructor(
    readonly page: Page,
    readonly server: CodeServer,
  ) {}

  /** Load the workbench for `target` and wait until it is drawn. */
  static async open(page: Page, server: CodeServer, target: { workspace: string } | { folder: string }): Promise<Workbench> {
    await page.goto(server.urlFor(target));
    await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
    return new Workbench(page, server);
  }

  /** Reload the window ("Developer: Reload Window"): a new extension host, sidecar and MCP servers. */
  async reload(): Promise<void> {
    await this.page.reload();
    await this.page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  }

  // The command palette.

  /** Run a command by its palette title, e.g. "MCP: Pick Resource". */
  async runCommand(title: string): Promise<void> {
    await this.page.keyboard.press("F1");
    const input = this.quickInput.locator("input.input");
    await input.waitFor();
    await input.fill(`>${title}`);
    // Click the row whose label is exactly the title: VS Code's own MCP commands have similar names.
    const row = this.quickRows.filter({ has: this.page.locator(".label-name", { hasText: new RegExp(`^${escapeRegExp(title)}$`) }) });
    await row.first().click();
  }

  // Modal dialogs.

  /** The modal dialog box, visible or not. */
  get dialog(): Locator {
    return this.page.locator(".monaco-dialog-box");
  }

  /** Wait for a modal dialog whose text matches `text`, and return all of its text. */
  async waitForDialog(text: RegExp): Promise<string> {
    await expect(this.dialog, `a dialog matching ${text}`).toContainText(text, { timeout: STEP_TIMEOUT });
    return this.dialog.innerText();
  }

  /** Press a button of the visible modal dialog. */
  async pressDialogButton(name: string): Promise<void> {
    await this.dialog.getByRole("button", { name, exact: true }).click();
  }

  // Quick picks.

  /** The quick input (palette, quick pick, input box). */
  get quickInput(): Locator {
    return this.page.locator(".quick-input-widget");
  }

  /** The rows of the visible quick pick. */
  get quickRows(): Locator {
    return this.quickInput.locator(".quick-input-list .monaco-list-row");
  }

  /** The folder row named `name` of a multi-select folder picker (its label, description and detail). */
  folderRow(name: string): Locator {
    return this.quickRows.filter({ has: this.page.getByRole("checkbox", { name, exact: true }) });
  }

  /** The row whose label contains `label`. */
  quickRow(label: string | RegExp): Locator {
    return this.quickRows.filter({ has: this.page.locator(".label-name", { hasText: label }) });
  }

  /** The checkbox of the folder `name` in a multi-select folder picker. */
  folderCheckbox(name: string): Locator {
    return this.quickInput.getByRole("checkbox", { name, exact: true });
  }

  /**
   * Every row of the visible quick pick, scrolling through the virtualized list: its label and the group
   * (separator label) it is in, in order.
   */
  async allQuickRows(): Promise<{ label: string; group: string }[]> {
    await this.quickInput.locator(".quick-input-list .monaco-list").hover();
    const seen = new Map<number, { label: string; separator: string }>();
    let total: number | undefined;
    for (let attempt = 0; attempt < 200; attempt++) {
      const visible = await this.quickRows.evaluateAll((rows) =>
        rows.filter((row) => row.checkVisibility()).map((row) => ({
          index: Number(row.getAttribute("aria-posinset")),
          total: Number(row.getAttribute("aria-setsize")),
          label: (row.querySelector(".label-name")?.textContent ?? "").trim(),
          // Rows are recycled: a hidden separator element may still hold an earlier list's text.
          separator: Array.from(row.querySelectorAll(".quick-input-list-separator"))
            .filter((separator) => separator.checkVisibility())
            .map((separator) => separator.textContent ?? "")
            .join(""),
        })),
      );
      for (const row of visible) {
        if (row.total !== total) {
          seen.clear(); // The list changed under us: start again.
          total = row.total;
        }
        seen.set(row.index, { label: row.label, separator: row.separator });
      }
      if (total !== undefined && seen.size === total) {
        break; // Positions are 1…total, so every row was seen.
      }
      await this.page.mouse.wheel(0, seen.has(1) ? 200 : -100_000);
    }
    let group = "";
    return [...seen.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, row]) => {
        group = row.separator || group;
        return { label: row.label, group };
      });
  }

  /** The labels of the visible quick pick's rows by group, once `done` says the list is complete. */
  async quickGroups(done: (groups: Map<string, string[]>) => boolean): Promise<Map<string, string[]>> {
    let groups = new Map<string, string[]>();
    await expect
      .poll(
        async () => {
          groups = new Map();
          for (const row of await this.allQuickRows()) {
            groups.set(row.group, [...(groups.get(row.group) ?? []), row.label]);
          }
          return done(groups);
        },
        { message: "the quick pick to list everything expected", timeout: STEP_TIMEOUT },
      )
      .toBe(true);
    return groups;
  }

  /** Type into the quick input box (replacing what is there). */
  async quickType(text: string): Promise<void> {
    await this.quickInput.locator("input.input").fill(text);
  }

  /** Accept the quick pick (the "OK" of a multi-select, the active item of a single one). */
  async quickAccept(): Promise<void> {
    await this.quickInput.locator("input.input").press("Enter");
  }

  /** The visible quick pick's title. */
  get quickTitle(): Locator {
    return this.quickInput.locator(".quick-input-title");
  }

  // The rest of the workbench.

  /** The extension's status bar item. */
  get status(): Locator {
    return this.page.locator('[id="host-bridge.host-bridge.hostBridge.status"]');
  }

  /** A status bar item showing exactly `text` (besides its icon). */
  statusItem(text: string): Locator {
    return this.page.locator(".statusbar-item", { hasText: new RegExp(`^\\s*${escapeRegExp(text)}\\s*$`) });
  }

  /** The active editor tab. */
  get activeTab(): Locator {
    return this.page.locator(".tabs-container .tab.active");
  }

  /** The lines of the active text editor. */
  get editorLines(): Locator {
    return this.page.locator(".editor-group-container.active .monaco-editor .view-lines");
  }

  /**
   * The notification holding `text`: its toast (kept shown: the pointer rests on it), or its entry in the notification
   * center, which is opened when the toast is gone (behind a modal dialog). Waits until the extension logged it.
   */
  async notification(text: string): Promise<Locator> {
    await waitFor(`the notification “${text}”`, () => (this.server.extensionLog().includes(text) ? true : undefined));
    const toast = this.toasts.locator(".notification-toast", { hasText: text });
    if (await toast.isVisible()) {
      // A toast hides by itself after a while, sooner than a loaded machine takes a screenshot, but not while the
      // pointer is over it.
      await toast.hover();
      return toast;
    }
    await this.runCommand("Notifications: Show Notifications");
    const entry = this.page.locator(".notifications-center .notification-list-item", { hasText: text });
    await expect(entry).toBeVisible();
    return entry;
  }

  /** Notification toasts. */
  get toasts(): Locator {
    return this.page.locator(".notifications-toasts");
  }

  /** Save a screenshot of the whole page as `screenshots/<name>.png`, without tooltips in the way. */
  async screenshot(name: string): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await this.page.screenshot({
      path: path.join(SCREENSHOTS, `${name}.png`),
      style: ".workbench-hover-container { display: none !important; }",
    });
  }

  /**
   * The sidecar processes this code-server runs now: `python -m host_bridge serve`, or the platform package's
   * `python -I -S …/python/run_sidecar.py serve`.
   */
  sidecars(): ProcessInfo[] {
    return descendants(this.server.pid).filter((info) =>
      /(\bhost_bridge|\/python\/run_sidecar\.py) serve$/.test(info.command),
    );
  }

  /** The processes this code-server runs whose command line contains `needle` (e.g. an MCP server's script). */
  processesRunning(needle: string): ProcessInfo[] {
    return descendants(this.server.pid).filter((info) => info.command.includes(needle));
  }
}

/** `text` as a regular expression that matches it literally. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
