// The quick pick of "MCP: Pick Resource" and "MCP: Insert Resource": every server's resources and templates,
// filled page by page as the sidecar answers, and kept up to date while it is open: a server that comes up is
// listed when it runs, one that says its list changed is listed again, one that stops is emptied, and a server
// without resources says why in a row of its own (starting, awaiting trust, failed, none offered). Opened while
// the host bridge itself starts, it lists everything once it runs. Three parts, each its own module: what is kept
// between openings (memory.ts), what this showing lists (listing.ts) and what it draws (rendering.ts); this module
// makes the quick pick, wires them to the sidecar's events and answers the pick.
import * as vscode from "vscode";
import type { Ctx } from "../ctx";
import { type Notice, ResourceCatalog } from "../resources/resourceModel";
import { serverLabel } from "../status/statusModel";
import { errorMessage } from "../text";
import { KEEP_OPEN, type Outcome, acceptedItem, runQuickPick } from "../ui/quickPick";
import { PickerListing, type Redraws } from "./listing";
import type { PickerMemory } from "./memory";
import { PickerRendering } from "./rendering";
import type { PickerAnswer, RowItem } from "./resourcePickerModel";

export type { Choice, PickerAnswer } from "./resourcePickerModel";

/** One showing of the resource quick pick; {@link ResourcePicker.choose} makes and runs one. */
export class ResourcePicker {
  private readonly pick = vscode.window.createQuickPick<RowItem>();
  private closed = false;
  private readonly catalog: ResourceCatalog;
  private readonly listing: PickerListing;
  private readonly rendering: PickerRendering;
  private readonly listeners: vscode.Disposable[] = [];
  /** The label of a server, for rows and notices. */
  private readonly labelOf = (id: string): string => {
    const server = this.ctx.servers.get(id);
    return server === undefined ? id : serverLabel(server);
  };
  /** The listing's redraws go to the rendering (made after the listing, which it reads). */
  private readonly redraws: Redraws = {
    redraw: () => this.rendering.redraw(),
    schedule: () => this.rendering.schedule(),
    now: () => this.rendering.now(),
    showKept: () => this.rendering.showKept(),
    prepareFilter: () => this.rendering.prepareFilter(),
  };

  private constructor(
    private readonly ctx: Ctx,
    private readonly memory: PickerMemory,
    moreNotices: () => readonly Notice[],
  ) {
    const isClosed = (): boolean => this.closed;
    this.catalog = new ResourceCatalog([...ctx.servers.keys()], this.labelOf);
    this.listing = new PickerListing(ctx, memory, this.catalog, this.redraws, isClosed, this.labelOf);
    this.rendering = new PickerRendering(
      ctx,
      this.pick,
      this.catalog,
      memory.items,
      this.listing,
      isClosed,
      this.labelOf,
      moreNotices,
    );
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
    const opened = Date.now();
    this.memory.pickerOpened();
    this.listeners.push(
      this.ctx.onResourcesChanged(({ server }) => this.listing.relistReporting(server)),
      this.ctx.onServerChanged((status) => this.listing.serverChanged(status)),
      this.ctx.onStateChanged(() => this.listing.sidecarChanged()),
      this.ctx.onStarted(() => {
        if (this.listing.stale) {
          this.listing.loadAll();
        }
      }),
    );
    // The first rows are set before the picker shows, so that they come with it: kept ones, or the first page (the
    // sidecar answers it from memory) when it comes within FIRST_PAGE_WAIT_MS.
    if (this.ctx.sidecarState.kind === "running") {
      this.listing.loadAll();
      this.refreshStatus();
      if (this.catalog.size === 0) {
        await settledWithin(this.listing.firstPage, FIRST_PAGE_WAIT_MS);
      }
    } else {
      this.rendering.render();
    }
    const answer = runQuickPick<RowItem, PickerAnswer>(
      this.pick,
      { title, matchOnDescription: true, matchOnDetail: true, keepScrollPosition: true },
      {
        accept: () => this.accept(),
        valueChanged: (value) => this.rendering.filterChanged(value),
        closed: () => this.close(),
      },
    );
    this.rendering.shown();
    // For the benchmark's breakdown (tests/editor/specs/benchmark.spec.ts): when the picker was asked for and shown.
    this.ctx.log.trace(
      `picker: opened at ${opened}, shown at ${Date.now()} with ${this.pick.items.length} rows of ${this.catalog.size} resources and templates`,
    );
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
          this.rendering.now();
        }
      },
      (error: unknown) => this.ctx.log.warn(`Could not refresh the MCP servers' status: ${errorMessage(error)}`),
    );
  }

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

  /** The picker closed: stop listening, cancel every listing under way and any pending redraw. */
  private close(): void {
    this.closed = true;
    this.memory.pickerClosed();
    for (const listener of this.listeners.splice(0)) {
      listener.dispose();
    }
    this.listing.stop();
    this.rendering.cancel();
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
