// What the resource picker keeps between its openings, for the extension's lifetime: each running server's
// complete listing, fetched in the background, and the quick pick items made for it, so that the picker opens with
// every row at once. The picker (resourcePicker.ts, listing.ts) lists afresh only what is not kept here.
import * as vscode from "vscode";
import { SidecarError, type Ctx } from "../ctx";
import * as protocol from "../protocol";
import { ResourceCatalog } from "../resources/resourceModel";
import { serverLabel } from "../status/statusModel";
import { errorMessage } from "../text";
import {
  type CachedListing,
  type Listed,
  ListingCache,
  type MirrorStatus,
  RowItems,
  listAllPages,
  mirrorKey,
} from "./resourcePickerModel";

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
