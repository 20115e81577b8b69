// The quick pick of "MCP: Pick Resource" and "MCP: Insert Resource": every server's resources and templates,
// filled page by page as the sidecar answers, and listed again for a server that says its list changed. What
// it shows and which row stays highlighted come from resourcePickerModel.ts and resourceModel.ts.
import * as vscode from "vscode";
import { SidecarError, type Ctx } from "./ctx";
import * as protocol from "./protocol";
import { ResourceCatalog } from "./resourceModel";
import {
  type Choice,
  FILTER_PLACEHOLDER,
  REPEATED_PAGE_WARNING,
  type RowItem,
  RowItems,
  Throttle,
  itemToHighlight,
  listAllPages,
  pickerPlaceholder,
} from "./resourcePickerModel";
import { serverLabel } from "./statusModel";
import { errorMessage } from "./text";
import { KEEP_OPEN, type Outcome, acceptedItem, runQuickPick } from "./ui/quickPick";

export type { Choice } from "./resourcePickerModel";

// While pages keep arriving the list is replaced at most this often: every replacement sends the whole
// list to the renderer.
const RENDER_INTERVAL_MS = 200;

/** One showing of the resource quick pick; {@link ResourcePicker.choose} makes and runs one. */
export class ResourcePicker {
  private readonly pick = vscode.window.createQuickPick<RowItem>();
  /** Cancelled when the picker closes: every listing of this picker stops then. */
  private readonly cancellation = new vscode.CancellationTokenSource();
  private readonly catalog: ResourceCatalog;
  private readonly items = new RowItems(vscode.QuickPickItemKind.Separator);
  private readonly renders = new Throttle(() => this.render(), RENDER_INTERVAL_MS);
  /**
   * Servers listed again after they said their list changed: their fresh listing replaces whatever the first
   * listing still brings of them.
   */
  private readonly relisted = new Set<string>();
  /** The re-listing under way per server; a newer one cancels it. */
  private readonly relistings = new Map<string, vscode.CancellationTokenSource>();
  private loading = true;
  /** Whether the user typed a filter: rows then name their server (the separators are gone). */
  private filtering = false;

  private constructor(private readonly ctx: Ctx) {
    this.catalog = new ResourceCatalog([...ctx.servers.keys()], this.labelOf);
  }

  /** Show the resource quick pick; the chosen resource or template, `undefined` when dismissed. */
  static choose(ctx: Ctx, title: string): Promise<Choice | undefined> {
    return new ResourcePicker(ctx).run(title);
  }

  private run(title: string): Promise<Choice | undefined> {
    const listChanged = this.ctx.onResourcesChanged(({ server }) => {
      this.relist(server).catch(this.reportFailure(`Listing the resources of ${this.labelOf(server)} again failed`));
    });
    const choice = runQuickPick<RowItem, Choice>(
      this.pick,
      {
        title,
        placeholder: FILTER_PLACEHOLDER,
        matchOnDescription: true,
        matchOnDetail: true,
        keepScrollPosition: true,
        busy: true,
      },
      {
        accept: () => this.accept(),
        valueChanged: (value) => this.filterChanged(value),
        closed: () => {
          listChanged.dispose();
          this.close();
        },
      },
    );
    void this.loadAll();
    return choice;
  }

  private get token(): vscode.CancellationToken {
    return this.cancellation.token;
  }

  private readonly labelOf = (id: string): string => {
    const server = this.ctx.servers.get(id);
    return server === undefined ? id : serverLabel(server);
  };

  /** A resource or template answers the picker; a warning shows the log, a separator nothing. */
  private accept(): Outcome<Choice> {
    const row = acceptedItem(this.pick)?.row;
    if (row === undefined || row.kind === "separator") {
      return KEEP_OPEN;
    }
    if (row.kind === "warning") {
      this.ctx.log.show(true);
      return KEEP_OPEN;
    }
    return row;
  }

  private filterChanged(value: string): void {
    if ((value !== "") !== this.filtering) {
      this.filtering = value !== "";
      this.renders.now();
    }
  }

  private render(): void {
    const active = this.pick.activeItems[0];
    const shown = this.catalog.rows().map((row) => this.items.itemFor(row, this.filtering ? this.labelOf : undefined));
    this.pick.items = shown;
    const highlight = itemToHighlight(shown, active, this.pick.value);
    if (highlight !== undefined) {
      this.pick.activeItems = [highlight];
    }
    this.pick.placeholder = pickerPlaceholder(this.loading, this.catalog.size, this.catalog.warnings.length);
  }

  /** The first listing of every server's resources and templates; the picker stops being busy after it. */
  private async loadAll(): Promise<void> {
    await Promise.allSettled([
      this.loadResources().catch(this.reportFailure("Listing MCP resources failed")),
      this.loadTemplates().catch(this.reportFailure("Listing MCP resource templates failed")),
    ]);
    this.loading = false;
    if (this.token.isCancellationRequested) {
      return;
    }
    this.pick.busy = false;
    this.renders.now();
  }

  private loadResources(): Promise<void> {
    return this.listPages({}, this.token, (page) => {
      this.catalog.addResources(page.items.filter((item) => !this.relisted.has(item.server)));
      this.renders.schedule();
    });
  }

  private async loadTemplates(): Promise<void> {
    const result = await this.ctx.request(protocol.listResourceTemplates, {}, this.token);
    if (!this.token.isCancellationRequested) {
      this.catalog.addTemplates(result.items.filter((item) => !this.relisted.has(item.server)));
      this.renders.schedule();
    }
  }

  /** List `server` again; only the latest re-listing of a server is shown. */
  private async relist(server: string): Promise<void> {
    this.relistings.get(server)?.cancel();
    const source = new vscode.CancellationTokenSource();
    this.relistings.set(server, source);
    try {
      const resources: protocol.ResourceItem[] = [];
      await this.listPages({ server }, source.token, (page) => resources.push(...page.items));
      if (source.token.isCancellationRequested) {
        return;
      }
      const templates = await this.ctx.request(protocol.listResourceTemplates, { server }, source.token);
      if (!source.token.isCancellationRequested) {
        this.relisted.add(server);
        this.catalog.replaceServer(server, resources, templates.items);
        this.renders.schedule();
      }
    } finally {
      if (this.relistings.get(server) === source) {
        this.relistings.delete(server);
      }
      source.dispose();
    }
  }

  /** Every page of resources for `params`, handed to `onPage` as it comes; their warnings join the list. */
  private async listPages(
    params: protocol.ListResourcesParams,
    token: vscode.CancellationToken,
    onPage: (page: protocol.ResourcePage) => void,
  ): Promise<void> {
    const end = await listAllPages(
      (request) => this.ctx.request(protocol.listResources, request, token),
      params,
      (page) => {
        onPage(page);
        this.addWarnings(page.warnings);
      },
      () => token.isCancellationRequested,
    );
    if (end === "repeated") {
      this.catalog.addWarnings([REPEATED_PAGE_WARNING]);
    }
  }

  private addWarnings(warnings: readonly string[]): void {
    for (const warning of warnings) {
      this.ctx.log.warn(`Listing resources: ${warning}`);
    }
    this.catalog.addWarnings(warnings);
  }

  /** A failed listing becomes a warning row (and a line in the log), unless the picker closed or it was cancelled. */
  private reportFailure(what: string): (error: unknown) => void {
    return (error) => {
      if (this.token.isCancellationRequested || SidecarError.isCancellation(error)) {
        return;
      }
      const message = errorMessage(error);
      this.ctx.log.error(`${what}: ${message}`);
      this.catalog.addWarnings([`${what}: ${message}`]);
      this.renders.schedule();
    };
  }

  /** The picker closed: cancel every listing under way and any pending redraw. */
  private close(): void {
    for (const source of this.relistings.values()) {
      source.cancel();
    }
    this.cancellation.cancel();
    this.cancellation.dispose();
    this.renders.cancel();
  }
}
