// What one open resource picker asks the sidecar, and what it does with the answers: the listing of every server
// when it opens (or rows kept by PickerMemory, memory.ts, while a server's listing is kept), a server listed again
// when it comes up, says its list changed or is shared other folders, and everything again after the host bridge
// restarted. It fills the picker's catalog and asks the rendering (rendering.ts) to redraw; it draws nothing itself.
import * as vscode from "vscode";
import { SidecarError, type Ctx } from "../ctx";
import * as protocol from "../protocol";
import type { ResourceCatalog } from "../resources/resourceModel";
import { errorMessage } from "../text";
import type { PickerMemory } from "./memory";
import {
  type CachedListing,
  type Listed,
  type ListingEnd,
  REPEATED_PAGE_WARNING,
  listAllPages,
  mirrorKey,
  sameListing,
} from "./resourcePickerModel";

/** What the listing asks of the rendering (rendering.ts) when rows arrive or go. */
export interface Redraws {
  /** Redraw soon; at once when this brings the first resources. */
  redraw(): void;
  /** Redraw soon (throttled). */
  schedule(): void;
  /** Redraw now. */
  now(): void;
  /** Draw what is there: a long kept listing first in part, then whole. */
  showKept(): void;
  /** A list shown in part is filtered in the extension: make its items' filter texts ahead of the first key. */
  prepareFilter(): void;
}

/** One server's items as the listing of everything brings them. */
interface Arriving {
  readonly resources: protocol.ResourceItem[];
  readonly templates: protocol.TemplateItem[];
}

/** The listings of one showing of the resource picker; {@link ResourcePicker} makes one and stops it on close. */
export class PickerListing {
  /** The listing of every server under way (the first, or the one after the host bridge restarted). */
  private loadSource: vscode.CancellationTokenSource | undefined;
  /**
   * Servers shown from their last listing ({@link PickerMemory}) while the listing of everything runs: their
   * fresh items replace those rows at its end, if they differ.
   */
  private readonly refreshing = new Set<string>();
  /** What the listing of everything brought so far, per server (kept as the servers' last listing at its end). */
  private readonly fresh = new Map<string, Arriving>();
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
  private readonly done = new Set<string>();
  /**
   * Per server, whether it ran with resources and which folders it was shared when its rows were last decided
   * ({@link mirrorKey}).
   */
  private readonly keys = new Map<string, string>();
  /** The host bridge stopped since everything was listed: list everything again when it runs. */
  private needsAll = true;
  private loadingAll = false;
  /** Settles once the listing of everything drew its first page, or ended. */
  private firstPageDrawn: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: Ctx,
    private readonly memory: PickerMemory,
    private readonly catalog: ResourceCatalog,
    private readonly redraws: Redraws,
    private readonly closed: () => boolean,
    private readonly labelOf: (server: string) => string,
  ) {}

  /** Whether everything must be listed again once the host bridge runs (it stopped since the last listing). */
  get stale(): boolean {
    return this.needsAll;
  }

  /** Settles once the listing of everything drew its first page, or ended. */
  get firstPage(): Promise<void> {
    return this.firstPageDrawn;
  }

  /** Whether the listing of everything, or a background listing the picker waits for, is under way. */
  get loading(): boolean {
    return this.loadingAll || this.awaiting.size > 0;
  }

  /** Whether any listing is under way: of everything, of one server, or a background one awaited. */
  get busy(): boolean {
    return this.loading || this.relistings.size > 0;
  }

  /** Whether the listing of `server` ended while the picker is open (a server that lists nothing then says so). */
  listed(server: string): boolean {
    return this.done.has(server);
  }

  /**
   * List every server's resources and templates afresh; the picker stops being busy after it. A server whose
   * last listing was kept shows it meanwhile.
   */
  loadAll(): void {
    if (this.closed()) {
      return;
    }
    this.needsAll = false;
    this.stop();
    this.catalog.clear();
    this.relisted.clear();
    this.done.clear();
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
        this.done.add(server.id);
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
    this.loadingAll = true;
    let firstPageDrawn = (): void => undefined;
    this.firstPageDrawn = new Promise((resolve) => {
      firstPageDrawn = resolve;
    });
    this.redraws.showKept();
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
   * A server's status changed: when it started or stopped running with resources, its rows are redone (listed
   * when it runs, emptied when not); its notice follows in any case.
   */
  serverChanged(status: protocol.ServerStatus): void {
    if (this.closed()) {
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
        this.done.delete(status.id);
        this.catalog.replaceServer(status.id, [], []);
      }
    }
    this.redraws.schedule();
  }

  /** The host bridge stopped, failed or is starting: nothing listed holds any more; list again once it runs. */
  sidecarChanged(): void {
    if (this.closed() || this.ctx.sidecarState.kind === "running") {
      return;
    }
    this.needsAll = true;
    this.stop();
    this.awaiting.clear();
    this.loadingAll = false;
    this.catalog.clear();
    this.done.clear();
    this.refreshing.clear();
    this.fresh.clear();
    this.redraws.now();
  }

  /** List `server` again on its own (it said its list changed); a failure becomes a warning row. */
  relistReporting(server: string): void {
    this.relist(server).catch(this.reportFailure(`Listing the resources of ${this.labelOf(server)} again failed`));
  }

  /** Cancel the listing of everything and of each server. */
  stop(): void {
    this.loadSource?.cancel();
    this.loadSource?.dispose();
    this.loadSource = undefined;
    for (const source of this.relistings.values()) {
      source.cancel();
    }
    this.relistings.clear();
  }

  /**
   * Show the rows of `server` once the background listing of it under way ends ({@link PickerMemory.pending}), or
   * list it here if that keeps nothing; not if the server changed or was listed here meanwhile.
   */
  private awaitKept(server: string, listing: Promise<CachedListing | undefined>): void {
    this.awaiting.add(server);
    const key = this.keys.get(server);
    void listing.then((kept) => {
      if (
        !this.awaiting.delete(server) ||
        this.closed() ||
        this.keys.get(server) !== key ||
        this.relisted.has(server)
      ) {
        this.redraws.schedule();
        return;
      }
      if (kept === undefined) {
        this.relistReporting(server);
        return;
      }
      this.catalog.setSortedGroup(server, kept.group);
      this.done.add(server);
      this.redraws.redraw();
      this.redraws.prepareFilter();
    });
  }

  /**
   * Every server that runs with resources has its listing kept, and kept up to date (it is fetched again when the
   * server says its list changed): show those rows, and list afresh only the servers that do not say when their
   * list changes (their rows are replaced if the listing differs).
   */
  private showKeptOnly(): void {
    this.refreshing.clear();
    this.loadingAll = false;
    this.firstPageDrawn = Promise.resolve();
    this.redraws.showKept();
    this.redraws.prepareFilter();
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
   * The listing of everything ended. Every server that runs with resources was in it, unless it came up
   * meanwhile (then it is listed on its own): a server shown from its last listing gets its fresh rows if they
   * differ, and each complete listing is kept for the next opening.
   */
  private loaded(failed: boolean): void {
    this.loadingAll = false;
    for (const server of this.ctx.servers.values()) {
      if (server.state !== "running" || server.resources === undefined || this.relisted.has(server.id)) {
        continue;
      }
      this.done.add(server.id);
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
    this.redraws.now();
    this.redraws.prepareFilter();
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
      this.redraws.redraw();
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
      this.redraws.redraw();
    }
  }

  /** List `server` on its own; only its latest listing is shown. */
  private async relist(server: string): Promise<void> {
    if (this.closed()) {
      return;
    }
    this.relistings.get(server)?.cancel();
    const source = new vscode.CancellationTokenSource();
    this.relistings.set(server, source);
    this.done.delete(server);
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
        this.done.add(server);
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
        this.redraws.redraw();
      }
    } catch (error) {
      // A server that stopped meanwhile says so in its notice; its failed listing is no news.
      if (this.ctx.servers.get(server)?.state === "running") {
        throw error;
      }
    } finally {
      if (this.relistings.get(server) === source) {
        this.relistings.delete(server);
        this.redraws.schedule();
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
      if (this.closed() || token?.isCancellationRequested === true || SidecarError.isCancellation(error)) {
        return;
      }
      const message = errorMessage(error);
      this.ctx.log.error(`${what}: ${message}`);
      this.catalog.addWarnings([`${what}: ${message}`]);
      this.redraws.schedule();
    };
  }
}
