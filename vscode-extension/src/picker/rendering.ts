// What one open resource picker shows: the catalog's rows as quick pick items, redrawn at most every few
// milliseconds while pages arrive, never more than MAX_SHOWN resources and templates at once (a longer list shows
// each server's share and is filtered here as the user types), a notice per server that shows nothing, the
// placeholder and the busy bar. Which rows and items come from resourcePickerModel.ts; what is listed, from
// listing.ts.
import type * as vscode from "vscode";
import type { Ctx } from "../ctx";
import type { Notice, ResourceCatalog } from "../resources/resourceModel";
import type { Redraws } from "./listing";
import {
  FIRST_ROWS,
  MAX_SHOWN,
  type RowItem,
  type RowItems,
  Throttle,
  comingUp,
  filterRows,
  itemToHighlight,
  pickerPlaceholder,
  renderInterval,
  serverNotice,
  sidecarNotice,
  windowRows,
} from "./resourcePickerModel";

/** What the rendering asks of the listing (listing.ts). */
export interface ListingProgress {
  /** Whether the listing of everything, or a background listing the picker waits for, is under way. */
  readonly loading: boolean;
  /** Whether any listing is under way. */
  readonly busy: boolean;
  /** Whether the listing of `server` ended while the picker is open. */
  listed(server: string): boolean;
}

/** Draws one showing of the resource picker; {@link ResourcePicker} makes one and cancels it on close. */
export class PickerRendering implements Redraws {
  private readonly renders = new Throttle(
    () => this.render(),
    () => renderInterval(this.catalog.size),
  );
  /** Servers given a notice, so that one gone from the status loses it. */
  private readonly noticed = new Set<string>();
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
  /**
   * Work put off until the picker is shown ({@link soon}), or `undefined` once it is: the extension host writes
   * the picker's first update to the window from a timer that `show()` sets, so a timer set before it would run
   * first and hold that update back.
   */
  private beforeShow: (() => void)[] | undefined = [];

  constructor(
    private readonly ctx: Ctx,
    private readonly pick: vscode.QuickPick<RowItem>,
    private readonly catalog: ResourceCatalog,
    private readonly items: RowItems,
    private readonly progress: ListingProgress,
    private readonly closed: () => boolean,
    private readonly labelOf: (server: string) => string,
    private readonly moreNotices: () => readonly Notice[],
  ) {}

  /** The picker is shown: run the work put off until then. */
  shown(): void {
    for (const work of this.beforeShow?.splice(0) ?? []) {
      setTimeout(work, 0);
    }
    this.beforeShow = undefined;
  }

  /** Redraw soon (throttled). */
  schedule(): void {
    this.renders.schedule();
  }

  /** Redraw now. */
  now(): void {
    this.renders.now();
  }

  /** Drop a redraw still pending (the picker closed). */
  cancel(): void {
    this.renders.cancel();
  }

  /** Redraw soon; at once when this brings the first resources (nothing to wait for then). */
  redraw(): void {
    if (this.shownEntries === 0 && this.catalog.size > 0) {
      this.renders.now();
    } else {
      this.renders.schedule();
    }
  }

  /** The filter changed: rows name their server while it is not empty, and a long list is filtered here. */
  filterChanged(value: string): void {
    this.filter = value;
    if ((value !== "") !== this.filtering || this.windowed) {
      this.filtering = value !== "";
      this.renders.now();
    }
  }

  /**
   * Draw what there is now: a long kept listing first in part, which reaches the window quickly, and whole right
   * after.
   */
  showKept(): void {
    if (this.catalog.rows().length <= FIRST_ROWS) {
      this.renders.now();
      return;
    }
    this.render(FIRST_ROWS);
    this.soon(() => {
      if (!this.closed()) {
        this.renders.now();
      }
    });
  }

  /**
   * A list shown in part is filtered here as the user types: make its items and their texts for the filter now,
   * while the user reads the list, rather than at the first key.
   */
  prepareFilter(): void {
    if (!this.windowed || this.filtering) {
      return;
    }
    this.soon(() => {
      if (this.closed()) {
        return;
      }
      for (const row of this.catalog.rows()) {
        if (row.kind === "resource" || row.kind === "template") {
          this.items.prepared(this.items.itemFor(row, this.labelOf));
        }
      }
    });
  }

  /** Replace the list with the catalog's rows (the first `limit` of them, for a quick first showing). */
  render(limit?: number): void {
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
      this.progress.loading,
      this.catalog.size,
      this.catalog.warnings.length,
      this.catalog.noticeCount,
    );
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
    return this.progress.busy || [...this.ctx.servers.values()].some(comingUp);
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
      this.catalog.setNotice(server.id, serverNotice(server, this.progress.listed(server.id)));
      this.noticed.add(server.id);
    }
    const sidecar = sidecarNotice(this.ctx.sidecarState);
    this.catalog.setGeneralNotices([...(sidecar === undefined ? [] : [sidecar]), ...this.moreNotices()]);
  }
}
