// The quick pick of "MCP: Pick Resource" and "MCP: Insert Resource": every server's resources and templates,
// filled page by page as the sidecar answers, and kept up to date while it is open: a server that comes up is
// listed when it runs, one that says its list changed is listed again, one that stops is emptied, and a server
// without resources says why in a row of its own (starting, awaiting trust, failed, none offered). Opened while
// the host bridge itself starts, it lists everything once it runs. The sidecar keeps every server's list, so a
// listing takes two answers (a first page of 100, then the rest); the picker shows with its first rows, and never
// hands the window more than MAX_SHOWN resources and templates: a longer list shows each server's share, and is
// filtered here as the user types. What it shows and which row stays highlighted come from resourcePickerModel.ts,
// resourceModel.ts and quickFilter.ts.
import * as vscode from "vscode";
import { SidecarError, type Ctx } from "../ctx";
import * as protocol from "../protocol";
import { type Notice, ResourceCatalog } from "../resources/resourceModel";
import {
  type CachedListing,
  ListingCache,
  type MirrorStatus,
  type PickerAnswer,
  FIRST_ROWS,
  type Listed,
  type ListingEnd,
  MAX_SHOWN,
  REPEATED_PAGE_WARNING,
  type RowItem,
  RowItems,
  Throttle,
  comingUp,
  filterRows,
  itemToHighlight,
  listAllPages,
  pickerPlaceholder,
  mirrorKey,
  renderInterval,
  sameListing,
  serverNotice,
  sidecarNotice,
  windowRows,
} from "./resourcePickerModel";
import { serverLabel } from "../status/statusModel";
import { errorMessage } from "../text";
import { KEEP_OPEN, type Outcome, acceptedItem, runQuickPick } from "../ui/quickPick";

export type { Choice, PickerAnswer } from "./resourcePickerModel";

/**
 * What the picker keeps between its openings, for the extension's lifetime: each running server's complete
 * listing (so the picker opens with every row at once) and the quick pick items made for them. A server's listing
 * is fetched in the background when it starts running, when it says its list changed, and when the folders shared
 * with it change (its listing from before is dropped at once); while a picker is open, the picker lists and keeps
 * what it lists. At most {@link MAX_KEPT} resources and templates are kept over every server.
 */
export class PickerMemory {
  readonly cache = new ListingCache();
  readonly items = new RowItems(vscode.QuickPickItemKind.Separator);
  /** The background listing of each server under way, and the {@link mirrorKey} it is for; a newer one cancels it. */
  private readonly fetching = new Map<
    string,
    { source: vscode.CancellationTokenSource; key: string; done: Promise<void> }
  >();
  /** How many pickers are open. */
  private open = 0;

  constructor(private readonly ctx: Ctx) {
    ctx.pushExtCleanup(
      ctx.onResourcesChanged(({ server }) => {
        this.cache.forget(server);
        this.fetch(server, true);
      }),
      ctx.onServerChanged((status) => {
        if (this.cache.serverChanged(status) || this.cache.get(status) === undefined) {
          this.fetch(status.id);
        }
      }),
      ctx.onStateChanged((state) => {
        if (state.kind !== "running") {
          this.stopAll();
          this.cache.clear();
        }
      }),
      ctx.onStarted(() => this.fetchMissing()),
      { dispose: () => this.stopAll() },
    );
  }

  /**
   * A picker opened: while it is open it lists for itself, but a background listing under way goes on (the picker
   * takes its result, {@link pending}).
   */
  pickerOpened(): void {
    this.open += 1;
  }

  /**
   * The listing of `server` that a background fetch under way for its connection and folders will keep, when it
   * ends (`undefined` if it kept none); `undefined` when none is under way.
   */
  pending(server: MirrorStatus): Promise<CachedListing | undefined> | undefined {
    const under = this.fetching.get(server.id);
    if (under === undefined || under.key !== mirrorKey(server)) {
      return undefined;
    }
    return under.done.then(() => {
      const now = this.ctx.servers.get(server.id);
      return now === undefined ? undefined : this.cache.get(now);
    });
  }

  /** A picker closed: fetch what it did not keep. */
  pickerClosed(): void {
    this.open -= 1;
    this.fetchMissing();
  }

  private fetchMissing(): void {
    for (const server of this.ctx.servers.values()) {
      if (this.cache.get(server) === undefined) {
        this.fetch(server.id);
      }
    }
  }

  /**
   * List `server` in the background and keep its listing, if it runs with resources and no picker is open. A
   * listing under way for the same connection and folders goes on, unless `again` (the server's list changed).
   */
  private fetch(server: string, again = false): void {
    const status = this.ctx.servers.get(server);
    const under = this.fetching.get(server);
    if (under !== undefined && !again && status !== undefined && under.key === mirrorKey(status)) {
      return;
    }
    under?.source.cancel();
    this.fetching.delete(server);
    if (
      this.open > 0 ||
      this.ctx.sidecarState.kind !== "running" ||
      status?.state !== "running" ||
      status.resources === undefined
    ) {
      return;
    }
    const source = new vscode.CancellationTokenSource();
    const key = mirrorKey(status);
    const done = this.listServer(server, source.token)
      .then((listed) => {
        const now = this.ctx.servers.get(server);
        if (
          listed === undefined ||
          source.token.isCancellationRequested ||
          now === undefined ||
          mirrorKey(now) !== key ||
          this.cache.size + listed.resources.length + listed.templates.length > MAX_KEPT
        ) {
          return;
        }
        const catalog = new ResourceCatalog([server]);
        catalog.addResources(listed.resources);
        catalog.addTemplates(listed.templates);
        const listing = { group: catalog.sortedGroup(server) ?? { resources: [], templates: [] }, ...listed };
        this.cache.set(now, listing);
        this.warm(server, listing, catalog, serverLabel(now));
      })
      .catch((error: unknown) => {
        if (!SidecarError.isCancellation(error) && !source.token.isCancellationRequested) {
          this.ctx.log.debug(`Listing the resources of ${server} ahead of the picker failed: ${errorMessage(error)}`);
        }
      })
      .finally(() => {
        if (this.fetching.get(server)?.source === source) {
          this.fetching.delete(server);
        }
        source.dispose();
      });
    this.fetching.set(server, { source, key, done });
  }

  /** Every resource and template of `server`, when its listing was complete. */
  private async listServer(server: string, token: vscode.CancellationToken): Promise<Listed | undefined> {
    const resources: protocol.ResourceItem[] = [];
    let complete = true;
    const end = await listAllPages(
      (request) => this.ctx.request(protocol.listResources, request, token),
      { server },
      (page) => {
        complete &&= page.warnings.length === 0;
        resources.push(...page.items);
      },
      () => token.isCancellationRequested,
    );
    if (!complete || end !== "done") {
      return undefined;
    }
    const templates = await this.ctx.request(protocol.listResourceTemplates, { server }, token);
    return { resources, templates: templates.items };
  }

  /**
   * Make the quick pick items of a kept listing, and their texts for the filter, ahead of the picker opening or the
   * user typing: {@link WARM_CHUNK} rows at a time, so that a command that comes meanwhile waits for no more than
   * one chunk; it stops once the listing is no longer kept.
   */
  private warm(server: string, listing: CachedListing, catalog: ResourceCatalog, label: string): void {
    const rows = catalog.rows().filter((row) => row.kind === "resource" || row.kind === "template");
    let next = 0;
    const step = (): void => {
      const status = this.ctx.servers.get(server);
      if (status === undefined || this.cache.get(status) !== listing) {
        return;
      }
      const end = Math.min(rows.length, next + WARM_CHUNK);
      for (; next < end; next += 1) {
        const row = rows[next];
        if (row !== undefined) {
          this.items.itemFor(row);
          this.items.prepared(this.items.itemFor(row, () => label));
        }
      }
      if (next < rows.length) {
        setTimeout(step, 0);
      }
    };
    setTimeout(step, 0);
  }

  private stopAll(): void {
    for (const { source } of this.fetching.values()) {
      source.cancel();
    }
    this.fetching.clear();
  }
}

/**
 * The most resources and templates kept over every server between openings of the picker (the host bridge keeps
 * at most 50 000 of each server).
 */
const MAX_KEPT = 100_000;

/** How many rows of a kept listing get their quick pick items at a time (a few milliseconds' work). */
const WARM_CHUNK = 500;

/** One server's items as the listing of everything brings them. */
interface Arriving {
  readonly resources: protocol.ResourceItem[];
  readonly templates: protocol.TemplateItem[];
}

/** One showing of the resource quick pick; {@link ResourcePicker.choose} makes and runs one. */
export class ResourcePicker {
  private readonly pick = vscode.window.createQuickPick<RowItem>();
  private closed = false;
  /** The listing of every server under way (the first, or the one after the host bridge restarted). */
  private loadSource: vscode.CancellationTokenSource | undefined;
  private readonly catalog: ResourceCatalog;
  private readonly items: RowItems;
  /**
   * Servers shown from their last listing ({@link PickerMemory}) while the listing of everything runs: their
   * fresh items replace those rows at its end, if they differ.
   */
  private readonly refreshing = new Set<string>();
  /** What the listing of everything brought so far, per server (kept as the servers' last listing at its end). */
  private readonly fresh = new Map<string, Arriving>();
  private readonly renders = new Throttle(
    () => this.render(),
    () => renderInterval(this.catalog.size),
  );
  /** Servers whose rows come from a background listing of {@link PickerMemory} under way when the picker opened. */
  private readonly awaiting = new Set<string>();
  /**
   * Servers listed on their own after the listing of everything began (they came up, stopped, or said their list
   * changed): their own listing replaces whatever the listing of everything still brings of them.
   */
  private readonly relisted = new Set<string>();
  /** The listing of one server under way; a newer one cancels it. */
  private readonly relistings = new Map<string, vscode.CancellationTokenSource>();
  /** Servers whose listing ended while the picker is open: one that lists nothing then says so. */
  private readonly listed = new Set<string>();
  /**
   * Per server, whether it ran with resources and which folders it was shared when its rows were last decided
   * ({@link mirrorKey}).
   */
  private readonly keys = new Map<string, string>();
  /** Servers given a notice, so that one gone from the status loses it. */
  private readonly noticed = new Set<string>();
  /** The host bridge stopped since everything was listed: list everything again when it runs. */
  private stale = true;
  private loading = false;
  /** How many resources and templates the last redraw showed. */
  private shownEntries = 0;
  /** Whether the user typed a filter: rows then name their server (the separators are gone). */
  private filtering = false;
  /** The filter as typed. */
  private filter = "";
  /**
   * Whether the last redraw showed part of a list too long to show whole ({@link MAX_SHOWN}): then the list is
   * filtered here, and redrawn as the filter changes.
   */
  private windowed = false;
  private readonly listeners: vscode.Disposable[] = [];
  /** Settles once the listing of everything drew its first page, or ended. */
  private firstPage: Promise<void> = Promise.resolve();
  /**
   * Work put off until the picker is shown ({@link soon}), or `undefined` once it is: the extension host writes
   * the picker's first update to the window from a timer that `show()` sets, so a timer set before it would run
   * first and hold that update back.
   */
  private beforeShow: (() => void)[] | undefined = [];

  private constructor(
    private readonly ctx: Ctx,
    private readonly memory: PickerMemory,
    private readonly moreNotices: () => readonly Notice[],
  ) {
    this.catalog = new ResourceCatalog([...ctx.servers.keys()], this.labelOf);
    this.items = memory.items;
  }

  /**
   * Show the resource quick pick; the chosen resource or template, `showStatus` when a notice was picked,
   * `undefined` when dismissed. `moreNotices` are rows about servers the host bridge does not know (waiting for
   * workspace trust).
   */
  static choose(
    ctx: Ctx,
    memory: PickerMemory,
    title: string,
    moreNotices: () => readonly Notice[] = () => [],
  ): Promise<PickerAnswer | undefined> {
    return new ResourcePicker(ctx, memory, moreNotices).run(title);
  }

  private async run(title: string): Promise<PickerAnswer | undefined> {
    this.memory.pickerOpened();
    this.listeners.push(
      this.ctx.onResourcesChanged(({ server }) => this.relistReporting(server)),
      this.ctx.onServerChanged((status) => this.serverChanged(status)),
      this.ctx.onStateChanged(() => this.sidecarChanged()),
      this.ctx.onStarted(() => {
        if (this.stale) {
          this.loadAll();
        }
      }),
    );
    // The first rows are set before the picker shows, so that they come with it: kept ones, or the first page (the
    // sidecar answers it from memory) when it comes within FIRST_PAGE_WAIT_MS.
    if (this.ctx.sidecarState.kind === "running") {
      this.loadAll();
      this.refreshStatus();
      if (this.catalog.size === 0) {
        await settledWithin(this.firstPage, FIRST_PAGE_WAIT_MS);
      }
    } else {
      this.render();
    }
    const answer = runQuickPick<RowItem, PickerAnswer>(
      this.pick,
      { title, matchOnDescription: true, matchOnDetail: true, keepScrollPosition: true },
      {
        accept: () => this.accept(),
        valueChanged: (value) => this.filterChanged(value),
        closed: () => this.close(),
      },
    );
    for (const work of this.beforeShow?.splice(0) ?? []) {
      setTimeout(work, 0);
    }
    this.beforeShow = undefined;
    return answer;
  }

  /**
   * Ask for the servers' status behind the first rows: it puts the servers in configuration order (they are known
   * in the order they reported) and adds any not heard of yet; the list is redrawn if that changes the order.
   */
  private refreshStatus(): void {
    const before = [...this.ctx.servers.keys()].join("\n");
    this.ctx.status().then(
      () => {
        if (!this.closed && [...this.ctx.servers.keys()].join("\n") !== before) {
          this.renders.now();
        }
      },
      (error: unknown) => this.ctx.log.warn(`Could not refresh the MCP servers' status: ${errorMessage(error)}`),
    );
  }

  private readonly labelOf = (id: string): string => {
    const server = this.ctx.servers.get(id);
    return server === undefined ? id : serverLabel(server);
  };

  /** A resource or template answers the picker; a notice leads to the status; a warning shows the log. */
  private accept(): Outcome<PickerAnswer> {
    const row = acceptedItem(this.pick)?.row;
    if (row === undefined || row.kind === "separator") {
      return KEEP_OPEN;
    }
    if (row.kind === "warning") {
      this.ctx.log.show(true);
      return KEEP_OPEN;
    }
    if (row.kind === "notice") {
      return { kind: "showStatus" };
    }
    if (row.kind === "more") {
      return KEEP_OPEN;
    }
    return row;
  }

  private filterChanged(value: string): void {
    this.filter = value;
    if ((value !== "") !== this.filtering || this.windowed) {
      this.filtering = value !== "";
      this.renders.now();
    }
  }

  /** Redraw soon; at once when this brings the first resources (nothing to wait for then). */
  private redraw(): void {
    if (this.shownEntries === 0 && this.catalog.size > 0) {
      this.renders.now();
    } else {
      this.renders.schedule();
    }
  }

  /** Replace the list with the catalog's rows (the first `limit` of them, for a quick first showing). */
  private render(limit?: number): void {
    this.updateNotices();
    const active = this.pick.activeItems[0];
    const shown = this.shownItems(limit);
    this.pick.items = shown;
    const highlight = itemToHighlight(shown, active, this.pick.value);
    if (highlight !== undefined) {
      this.pick.activeItems = [highlight];
    }
    this.shownEntries = this.catalog.size;
    this.pick.busy = this.busy();
    this.pick.placeholder = pickerPlaceholder(
      this.loading || this.awaiting.size > 0,
      this.catalog.size,
      this.catalog.warnings.length,
      this.catalog.noticeCount,
    );
  }

  /**
   * The items to show: every row's, or (the first `limit`, or) for a catalog of more than {@link MAX_SHOWN}
   * resources and templates, the window's share of them ({@link windowRows}), or its matches of the filter
   * ({@link filterRows}).
   */
  private shownItems(limit: number | undefined): RowItem[] {
    const named = this.filtering ? this.labelOf : undefined;
    const rows = this.catalog.rows();
    this.windowed = limit === undefined && this.catalog.size > MAX_SHOWN;
    if (!this.windowed) {
      return (limit === undefined ? rows : rows.slice(0, limit)).map((row) => this.items.itemFor(row, named));
    }
    if (!this.filtering) {
      return windowRows(rows, MAX_SHOWN, this.labelOf).map((row) => this.items.itemFor(row));
    }
    const items = rows.map((row) => this.items.itemFor(row, named));
    return filterRows(
      items,
      this.filter,
      MAX_SHOWN,
      (hidden) => this.items.itemFor({ kind: "more", hidden }),
      (item) => this.items.prepared(item),
    );
  }

  /** Whether more is coming: a listing is under way, the host bridge starts, or a server is coming up. */
  private busy(): boolean {
    if (this.ctx.sidecarState.kind === "starting") {
      return true;
    }
    if (this.ctx.sidecarState.kind !== "running") {
      return false;
    }
    return (
      this.loading ||
      this.relistings.size > 0 ||
      this.awaiting.size > 0 ||
      [...this.ctx.servers.values()].some(comingUp)
    );
  }

  /** Each known server's notice (why it shows nothing), and the notices about the host bridge and the rest. */
  private updateNotices(): void {
    this.catalog.setServerOrder([...this.ctx.servers.keys()]);
    for (const server of this.noticed) {
      if (!this.ctx.servers.has(server)) {
        this.catalog.setNotice(server, undefined);
        this.noticed.delete(server);
      }
    }
    for (const server of this.ctx.servers.values()) {
      this.catalog.setNotice(server.id, serverNotice(server, this.listed.has(server.id)));
      this.noticed.add(server.id);
    }
    const sidecar = sidecarNotice(this.ctx.sidecarState);
    this.catalog.setGeneralNotices([...(sidecar === undefined ? [] : [sidecar]), ...this.moreNotices()]);
  }

  /**
   * List every server's resources and templates afresh; the picker stops being busy after it. A server whose
   * last listing was kept shows it meanwhile.
   */
  private loadAll(): void {
    if (this.closed) {
      return;
    }
    this.stale = false;
    this.stopListings();
    this.catalog.clear();
    this.relisted.clear();
    this.listed.clear();
    this.keys.clear();
    this.refreshing.clear();
    this.fresh.clear();
    this.awaiting.clear();
    let allKept = true;
    const pending = new Map<string, Promise<CachedListing | undefined>>();
    for (const server of this.ctx.servers.values()) {
      this.keys.set(server.id, mirrorKey(server));
      const kept = server.state === "running" ? this.memory.cache.get(server) : undefined;
      if (kept !== undefined) {
        this.catalog.setSortedGroup(server.id, kept.group);
        this.refreshing.add(server.id);
        this.listed.add(server.id);
      } else if (server.state === "running" && server.resources !== undefined) {
        const listing = this.memory.pending(server);
        if (listing === undefined) {
          allKept = false;
        } else {
          pending.set(server.id, listing);
        }
      }
    }
    if (allKept) {
      for (const [server, listing] of pending) {
        this.awaitKept(server, listing);
      }
      this.showKeptOnly();
      return;
    }
    const source = new vscode.CancellationTokenSource();
    this.loadSource = source;
    this.loading = true;
    let firstPageDrawn = (): void => undefined;
    this.firstPage = new Promise((resolve) => {
      firstPageDrawn = resolve;
    });
    this.showKept();
    let failed = false;
    const failure = (what: string) => {
      const report = this.reportFailure(what, source.token);
      return (error: unknown): void => {
        failed = true;
        report(error);
      };
    };
    // Templates are asked for once the first page of resources is in, so that they do not delay it.
    let templates: Promise<void> | undefined;
    const listTemplates = (): Promise<void> =>
      (templates ??= this.loadTemplates(source.token).catch(failure("Listing MCP resource templates failed")));
    void this.loadResources(source.token, () => {
      firstPageDrawn();
      void listTemplates();
    })
      .then((complete) => {
        // A listing cut short (a server left out, a repeated page) is shown but not kept.
        failed ||= !complete;
      }, failure("Listing MCP resources failed"))
      .then(listTemplates)
      .then(() => {
        firstPageDrawn();
        if (!source.token.isCancellationRequested) {
          this.loaded(failed);
        }
      });
  }

  /**
   * Show the rows of `server` once the background listing of it under way ends ({@link PickerMemory.pending}), or
   * list it here if that keeps nothing; not if the server changed or was listed here meanwhile.
   */
  private awaitKept(server: string, listing: Promise<CachedListing | undefined>): void {
    this.awaiting.add(server);
    const key = this.keys.get(server);
    void listing.then((kept) => {
      if (!this.awaiting.delete(server) || this.closed || this.keys.get(server) !== key || this.relisted.has(server)) {
        this.renders.schedule();
        return;
      }
      if (kept === undefined) {
        this.relistReporting(server);
        return;
      }
      this.catalog.setSortedGroup(server, kept.group);
      this.listed.add(server);
      this.redraw();
      this.prepareFilter();
    });
  }

  /**
   * Every server that runs with resources has its listing kept, and kept up to date (it is fetched again when the
   * server says its list changed): show those rows, and list afresh only the servers that do not say when their
   * list changes (their rows are replaced if the listing differs).
   */
  private showKeptOnly(): void {
    this.refreshing.clear();
    this.loading = false;
    this.firstPage = Promise.resolve();
    this.showKept();
    this.prepareFilter();
    for (const server of this.ctx.servers.values()) {
      if (
        server.state === "running" &&
        server.resources !== undefined &&
        server.resources.listChanged !== true &&
        !this.awaiting.has(server.id)
      ) {
        this.relistReporting(server.id);
      }
    }
  }

  /**
   * Draw what there is now: a long kept listing first in part, which reaches the window quickly, and whole right
   * after.
   */
  private showKept(): void {
    if (this.catalog.rows().length <= FIRST_ROWS) {
      this.renders.now();
      return;
    }
    this.render(FIRST_ROWS);
    this.soon(() => {
      if (!this.closed) {
        this.renders.now();
      }
    });
  }

  /** Run `work` from a timer, set once the picker is shown (the first update reaches the window first). */
  private soon(work: () => void): void {
    if (this.beforeShow === undefined) {
      setTimeout(work, 0);
    } else {
      this.beforeShow.push(work);
    }
  }

  /**
   * The listing of everything ended. Every server that runs with resources was in it, unless it came up
   * meanwhile (then it is listed on its own): a server shown from its last listing gets its fresh rows if they
   * differ, and each complete listing is kept for the next opening.
   */
  private loaded(failed: boolean): void {
    this.loading = false;
    for (const server of this.ctx.servers.values()) {
      if (server.state !== "running" || server.resources === undefined || this.relisted.has(server.id)) {
        continue;
      }
      this.listed.add(server.id);
      if (failed) {
        continue;
      }
      const fresh = this.fresh.get(server.id) ?? { resources: [], templates: [] };
      const kept = this.memory.cache.get(server);
      if (this.refreshing.has(server.id) && (kept === undefined || !sameListing(kept, fresh))) {
        this.catalog.replaceServer(server.id, fresh.resources, fresh.templates);
      }
      this.keep(server, fresh);
    }
    this.refreshing.clear();
    this.fresh.clear();
    this.renders.now();
    this.prepareFilter();
  }

  /**
   * A list shown in part is filtered here as the user types: make its items and their texts for the filter now,
   * while the user reads the list, rather than at the first key.
   */
  private prepareFilter(): void {
    if (!this.windowed || this.filtering) {
      return;
    }
    this.soon(() => {
      if (this.closed) {
        return;
      }
      for (const row of this.catalog.rows()) {
        if (row.kind === "resource" || row.kind === "template") {
          this.items.prepared(this.items.itemFor(row, this.labelOf));
        }
      }
    });
  }

  /** Keep the rows `server` shows now as its last listing, made of the items `listed` (equal to them). */
  private keep(server: protocol.ServerStatus, listed: Listed): void {
    const group = this.catalog.sortedGroup(server.id) ?? { resources: [], templates: [] };
    this.memory.cache.set(server, { group, resources: listed.resources, templates: listed.templates });
  }

  private freshOf(server: string): Arriving {
    let listed = this.fresh.get(server);
    if (listed === undefined) {
      listed = { resources: [], templates: [] };
      this.fresh.set(server, listed);
    }
    return listed;
  }

  /** Whether the rows of `server` come from the listing of everything now (not from its own, nor its last). */
  private showsFresh(server: string): boolean {
    return !this.relisted.has(server) && !this.refreshing.has(server);
  }

  /**
   * List every server's resources page by page; `afterFirstPage` runs once the first page is drawn. Whether the
   * listing was complete: no page said a server was left out or cut short.
   */
  private async loadResources(token: vscode.CancellationToken, afterFirstPage: () => void): Promise<boolean> {
    let complete = true;
    const end = await this.listPages({}, token, (page) => {
      complete &&= page.warnings.length === 0;
      for (const item of page.items) {
        this.freshOf(item.server).resources.push(item);
      }
      this.catalog.addResources(page.items.filter((item) => this.showsFresh(item.server)));
      this.redraw();
      afterFirstPage();
    });
    return complete && end === "done";
  }

  private async loadTemplates(token: vscode.CancellationToken): Promise<void> {
    const result = await this.ctx.request(protocol.listResourceTemplates, {}, token);
    if (!token.isCancellationRequested) {
      for (const item of result.items) {
        this.freshOf(item.server).templates.push(item);
      }
      this.catalog.addTemplates(result.items.filter((item) => this.showsFresh(item.server)));
      this.redraw();
    }
  }

  /**
   * A server's status changed: when it started or stopped running with resources, its rows are redone (listed
   * when it runs, emptied when not); its notice follows in any case.
   */
  private serverChanged(status: protocol.ServerStatus): void {
    if (this.closed) {
      return;
    }
    const key = mirrorKey(status);
    if (this.keys.get(status.id) !== key) {
      this.keys.set(status.id, key);
      if (status.state === "running" && status.resources !== undefined) {
        // Rows listed before the folders shared with it changed may be of a folder it no longer sees: gone now, and
        // the listing of everything neither shows nor keeps any more of it.
        this.relisted.add(status.id);
        this.refreshing.delete(status.id);
        this.catalog.replaceServer(status.id, [], []);
        this.relistReporting(status.id);
      } else {
        this.relistings.get(status.id)?.cancel();
        this.relisted.add(status.id);
        this.refreshing.delete(status.id);
        this.listed.delete(status.id);
        this.catalog.replaceServer(status.id, [], []);
      }
    }
    this.renders.schedule();
  }

  /** The host bridge stopped, failed or is starting: nothing listed holds any more; list again once it runs. */
  private sidecarChanged(): void {
    if (this.closed || this.ctx.sidecarState.kind === "running") {
      return;
    }
    this.stale = true;
    this.stopListings();
    this.awaiting.clear();
    this.loading = false;
    this.catalog.clear();
    this.listed.clear();
    this.refreshing.clear();
    this.fresh.clear();
    this.renders.now();
  }

  private relistReporting(server: string): void {
    this.relist(server).catch(this.reportFailure(`Listing the resources of ${this.labelOf(server)} again failed`));
  }

  /** List `server` on its own; only its latest listing is shown. */
  private async relist(server: string): Promise<void> {
    if (this.closed) {
      return;
    }
    this.relistings.get(server)?.cancel();
    const source = new vscode.CancellationTokenSource();
    this.relistings.set(server, source);
    this.listed.delete(server);
    try {
      const resources: protocol.ResourceItem[] = [];
      let complete = true;
      const end = await this.listPages({ server }, source.token, (page) => {
        complete &&= page.warnings.length === 0;
        resources.push(...page.items);
      });
      if (source.token.isCancellationRequested) {
        return;
      }
      const templates = await this.ctx.request(protocol.listResourceTemplates, { server }, source.token);
      if (!source.token.isCancellationRequested) {
        this.relisted.add(server);
        this.refreshing.delete(server);
        this.listed.add(server);
        const status = this.ctx.servers.get(server);
        const kept = status === undefined ? undefined : this.memory.cache.get(status);
        const listed = { resources, templates: templates.items };
        if (kept !== undefined && this.catalog.sortedGroup(server) !== undefined && sameListing(kept, listed)) {
          return; // the rows shown are these already
        }
        this.catalog.replaceServer(server, resources, templates.items);
        if (status !== undefined && complete && end === "done") {
          this.keep(status, { resources, templates: templates.items });
        } else {
          this.memory.cache.forget(server);
        }
        this.redraw();
      }
    } catch (error) {
      // A server that stopped meanwhile says so in its notice; its failed listing is no news.
      if (this.ctx.servers.get(server)?.state === "running") {
        throw error;
      }
    } finally {
      if (this.relistings.get(server) === source) {
        this.relistings.delete(server);
        this.renders.schedule();
      }
      source.dispose();
    }
  }

  /**
   * Every page of resources for `params`, handed to `onPage` as it comes; their warnings join the list. How the
   * listing ended.
   */
  private async listPages(
    params: protocol.ListResourcesParams,
    token: vscode.CancellationToken,
    onPage: (page: protocol.ResourcePage) => void,
  ): Promise<ListingEnd> {
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
    return end;
  }

  private addWarnings(warnings: readonly string[]): void {
    for (const warning of warnings) {
      this.ctx.log.warn(`Listing resources: ${warning}`);
    }
    this.catalog.addWarnings(warnings);
  }

  /**
   * A failed listing becomes a warning row (and a line in the log), unless the picker closed or the listing was
   * cancelled.
   */
  private reportFailure(what: string, token?: vscode.CancellationToken): (error: unknown) => void {
    return (error) => {
      if (this.closed || token?.isCancellationRequested === true || SidecarError.isCancellation(error)) {
        return;
      }
      const message = errorMessage(error);
      this.ctx.log.error(`${what}: ${message}`);
      this.catalog.addWarnings([`${what}: ${message}`]);
      this.renders.schedule();
    };
  }

  /** Cancel the listing of everything and of each server. */
  private stopListings(): void {
    this.loadSource?.cancel();
    this.loadSource?.dispose();
    this.loadSource = undefined;
    for (const source of this.relistings.values()) {
      source.cancel();
    }
    this.relistings.clear();
  }

  /** The picker closed: stop listening, cancel every listing under way and any pending redraw. */
  private close(): void {
    this.closed = true;
    this.memory.pickerClosed();
    for (const listener of this.listeners.splice(0)) {
      listener.dispose();
    }
    this.stopListings();
    this.renders.cancel();
  }
}

/**
 * How long the picker waits for the first page of resources before it shows without them (when it has none kept):
 * the sidecar answers that page from memory within a few milliseconds, and rows that come with the picker reach
 * the window in one message instead of two.
 */
const FIRST_PAGE_WAIT_MS = 50;

/** Wait until `promise` settles, but at most `ms` milliseconds. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([promise.then(noop, noop), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

function noop(): void {}
