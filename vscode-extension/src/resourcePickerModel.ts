// The resource picker's logic without the vscode API: its quick pick items (made once per row, so replacing the
// list stays cheap), which item stays highlighted when the list is replaced, its placeholder, the notices that say
// why a server shows nothing, the paging of a listing, and how often the list is redrawn while pages arrive.
// resourcePicker.ts drives the quick pick.
import type * as vscode from "vscode";
import type { SidecarState } from "./ctx";
import type * as protocol from "./protocol";
import {
  type Notice,
  type Row,
  type RowText,
  type SortedGroup,
  resourceText,
  templateText,
  withServer,
} from "./resourceModel";
import { resourcesNote, serverLabel } from "./statusModel";
import { PRODUCT, noIcons, oneLine, visible } from "./text";
import { type ListingKey, listingKey } from "./treeModel";

/** A quick pick item showing one row of the catalog. */
export interface RowItem extends vscode.QuickPickItem {
  readonly row: Row;
}

/** What the picker answers: a resource, or a template whose arguments are asked next. */
export type Choice = Extract<Row, { kind: "resource" | "template" }>;

/** The picker's answer: a {@link Choice}, or a notice was picked (show the servers' status, which says more). */
export type PickerAnswer = Choice | { readonly kind: "showStatus" };

/** What a notice row says it leads to. */
export const NOTICE_DETAIL = 'Select to open "MCP: Show Server Status".';

/** The filter's placeholder while the picker lists or shows resources. */
export const FILTER_PLACEHOLDER = "Filter by title, name, URI or description";

/** The warning shown when the sidecar hands out a cursor it handed out before. */
export const REPEATED_PAGE_WARNING = "The host bridge repeated a page of resources; the list may be incomplete.";

/** Quick pick items for catalog rows, made once per resource so replacing the list stays cheap. */
export class RowItems {
  private readonly byItem = new WeakMap<object, RowItem>();
  /** The same rows naming their server, for while the user filters (the separators are gone then). */
  private readonly byItemNamed = new WeakMap<object, RowItem>();
  private readonly separators = new Map<string, RowItem>();
  private readonly warnings = new Map<string, RowItem>();
  private readonly notices = new Map<string, RowItem>();

  /** `separatorKind` is `vscode.QuickPickItemKind.Separator`, passed in so that this module needs no vscode. */
  constructor(private readonly separatorKind: vscode.QuickPickItemKind) {}

  /** The item for `row`; with `serverLabel`, resources and templates name their server in the description. */
  itemFor(row: Row, serverLabel?: (server: string) => string): RowItem {
    switch (row.kind) {
      case "separator":
        return this.cached(this.separators, `${row.server}\n${row.label}`, () => ({
          row,
          label: noIcons(row.label),
          kind: this.separatorKind,
        }));
      case "warning":
        return this.cached(this.warnings, row.text, () => ({
          row,
          label: `$(warning) ${noIcons(row.text)}`,
          detail: "Select to show the log.",
          alwaysShow: true,
        }));
      case "notice":
        return this.cached(this.notices, `${row.server ?? ""}\n${row.severity}\n${row.text}`, () => ({
          row,
          label: `$(${row.severity}) ${noIcons(row.text)}`,
          detail: NOTICE_DETAIL,
          alwaysShow: true,
        }));
      case "resource":
        return this.textItem(row, row.item, () => resourceText(row.item), "", serverLabel);
      case "template":
        return this.textItem(row, row.item, () => templateText(row.item), "$(symbol-variable) ", serverLabel);
    }
  }

  private textItem(
    row: Row,
    key: protocol.ResourceItem | protocol.TemplateItem,
    text: () => RowText,
    icon: string,
    serverLabel: ((server: string) => string) | undefined,
  ): RowItem {
    const cache = serverLabel === undefined ? this.byItem : this.byItemNamed;
    let item = cache.get(key);
    if (item === undefined) {
      const shown = serverLabel === undefined ? text() : withServer(text(), serverLabel(key.server));
      item = { row, label: `${icon}${shown.label}`, description: shown.description, detail: shown.detail };
      cache.set(key, item);
    }
    return item;
  }

  private cached(map: Map<string, RowItem>, key: string, make: () => RowItem): RowItem {
    let item = map.get(key);
    if (item === undefined) {
      item = make();
      map.set(key, item);
    }
    return item;
  }
}

/** Whether two rows show the same resource, template, warning or separator (also across a re-listing). */
export function sameEntry(a: Row, b: Row): boolean {
  switch (a.kind) {
    case "resource":
      return b.kind === "resource" && b.item.server === a.item.server && b.item.uri === a.item.uri;
    case "template":
      return b.kind === "template" && b.item.server === a.item.server && b.item.uriTemplate === a.item.uriTemplate;
    case "warning":
      return b.kind === "warning" && b.text === a.text;
    case "notice":
      return b.kind === "notice" && b.server === a.server && b.text === a.text;
    case "separator":
      return b.kind === "separator" && b.server === a.server;
  }
}

/** Whether a row is something to open: a resource or a template. */
function openable(row: Row): boolean {
  return row.kind === "resource" || row.kind === "template";
}

/**
 * The item to highlight after the list was replaced by `shown` (replacing it moves the highlight to the top):
 * the entry that was highlighted (`active`, also when swapped for the variant naming its server, or re-listed),
 * never a warning or a notice, so Enter opens a resource. When that entry is gone, an empty `filter` starts again
 * on the first resource or template; `undefined` leaves the highlight where the quick pick puts it.
 */
export function itemToHighlight<T extends { readonly row: Row }>(
  shown: readonly T[],
  active: T | undefined,
  filter: string,
): T | undefined {
  const kept = active === undefined ? undefined : shown.find((item) => sameEntry(item.row, active.row));
  if (kept !== undefined && openable(kept.row)) {
    return kept;
  }
  if (filter === "") {
    return shown.find((item) => openable(item.row));
  }
  return undefined;
}

/**
 * The placeholder: the filter's while listing or when there is something to show, else why the list is empty
 * (the notices or warnings say it, or nothing does).
 */
export function pickerPlaceholder(loading: boolean, entries: number, warnings: number, notices = 0): string {
  if (loading || entries > 0) {
    return FILTER_PLACEHOLDER;
  }
  if (notices > 0) {
    return "No resources to show yet; the rows below say why.";
  }
  return warnings > 0
    ? "No resources could be listed; see the warnings above."
    : 'No MCP server offers resources right now. Run "MCP: Show Server Status" to see why.';
}

/**
 * Why `server` shows no resources in the picker, as its one row: it is starting (info), waits for trust, failed
 * (with its last error) or is stopped (warnings), declares no resources, or (once `listed`) lists none (info).
 * `undefined` while a running server with resources is still being listed.
 */
export function serverNotice(server: protocol.ServerStatus, listed: boolean): Notice | undefined {
  const name = `“${visible(serverLabel(server))}”`;
  const note = resourcesNote(server);
  if (note === undefined) {
    return listed ? { severity: "info", text: `${name} lists no resources.` } : undefined;
  }
  const error =
    server.lastError !== undefined && (server.state === "failed" || server.state === "stopped")
      ? `: ${visible(oneLine(server.lastError))}`
      : "";
  const severity = server.state === "starting" || server.state === "restarting" || server.state === "running";
  return { severity: severity ? "info" : "warning", text: `${name} ${note}${error}` };
}

/** Whether the picker should show that it is busy for this server: it is starting or restarting. */
export function comingUp(server: Pick<protocol.ServerStatus, "state">): boolean {
  return server.state === "starting" || server.state === "restarting";
}

/**
 * What the picker says about the host bridge itself while it is not running (its rows come once it runs);
 * nothing while it runs.
 */
export function sidecarNotice(sidecar: SidecarState): Notice | undefined {
  switch (sidecar.kind) {
    case "running":
      return undefined;
    case "starting":
      return { severity: "info", text: `${PRODUCT} is starting; the servers' resources appear here as they come up.` };
    case "stopped":
      return {
        severity: "warning",
        text: `${PRODUCT} is stopped${sidecar.reason === undefined ? "" : `: ${visible(oneLine(sidecar.reason))}`}`,
      };
    case "failed":
      return { severity: "warning", text: `${PRODUCT} failed: ${visible(oneLine(sidecar.reason))}` };
  }
}

/**
 * How long to wait before replacing the list again while pages keep arriving, for a list of `rows`: every
 * replacement sends the whole list to the window, which filters and draws it anew, so a longer list is replaced
 * less often (200 ms up to 1 000 rows, then 1 ms more per 5 rows): the window's work stays a bounded share of
 * the time. The list is replaced at once when the listing ends.
 */
export function renderInterval(rows: number): number {
  return Math.max(RENDER_INTERVAL_MS, Math.round(rows / 5));
}

/**
 * How many rows the picker shows first when it opens with a long list it kept: enough to fill it, few enough to
 * reach the window at once; the whole list follows right after.
 */
export const FIRST_ROWS = 100;

/** The shortest wait between two replacements of the list while pages arrive. */
export const RENDER_INTERVAL_MS = 200;

/** How a paged listing ended: after its last page, on a cursor seen before, or because it was cancelled. */
export type ListingEnd = "done" | "repeated" | "cancelled";

/**
 * Fetch every page of resources for `params`, handing each to `onPage` as it comes, until the last one, a
 * cursor that was handed out before (the listing would never end), or `cancelled()` after a fetch.
 */
export async function listAllPages(
  fetch: (params: protocol.ListResourcesParams) => Promise<protocol.ResourcePage>,
  params: protocol.ListResourcesParams,
  onPage: (page: protocol.ResourcePage) => void,
  cancelled: () => boolean,
): Promise<ListingEnd> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await fetch(cursor === undefined ? params : { ...params, cursor });
    if (cancelled()) {
      return "cancelled";
    }
    onPage(page);
    cursor = page.nextCursor;
    if (cursor !== undefined && seen.has(cursor)) {
      return "repeated";
    }
    if (cursor !== undefined) {
      seen.add(cursor);
    }
  } while (cursor !== undefined);
  return "done";
}

/**
 * Runs `run` at most once per `intervalMs` when asked with {@link schedule} (while pages keep arriving, since
 * every replacement of a quick pick's items sends the whole list to the renderer), or at once with {@link now}.
 * `intervalMs` may be a function, asked at each scheduling (the interval grows with the list).
 */
export class Throttle {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private last = 0;

  constructor(
    private readonly run: () => void,
    private readonly intervalMs: number | (() => number),
  ) {}

  /** Run now; a scheduled run is dropped (this one covers it). */
  now(): void {
    this.cancel();
    this.last = Date.now();
    this.run();
  }

  /** Run once `intervalMs` has passed since the last run, unless a run is scheduled already. */
  schedule(): void {
    if (this.timer !== undefined) {
      return;
    }
    const interval = typeof this.intervalMs === "number" ? this.intervalMs : this.intervalMs();
    this.timer = setTimeout(() => this.now(), Math.max(0, this.last + interval - Date.now()));
  }

  /** Drop a scheduled run. */
  cancel(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}

/** One server's complete listing as the picker keeps it: its rows, sorted, and what they were made from. */
export interface CachedListing {
  readonly group: SortedGroup;
  /** {@link listingFingerprint} of the items the rows were made from: a fresh listing equal to it changes nothing. */
  readonly fingerprint: string;
}

/** What a server's listing holds, as one string, to tell whether a fresh listing brought anything new. */
export function listingFingerprint(
  resources: readonly protocol.ResourceItem[],
  templates: readonly protocol.TemplateItem[],
): string {
  return JSON.stringify([resources, templates]);
}

/**
 * The last complete listing of each server, kept between openings of the picker so that it opens with every row
 * at once (and lists afresh behind them). A listing holds only for the server's connection it came from
 * ({@link listingKey}); it is forgotten when the server says its list changed, and everything is forgotten when
 * the host bridge stops (a new process has new connections).
 */
export class ListingCache {
  private readonly listings = new Map<string, { key: ListingKey; listing: CachedListing }>();

  /** The listing of `server` if one was kept for its current connection. */
  get(server: Pick<protocol.ServerStatus, "id" | "state" | "resources">): CachedListing | undefined {
    const kept = this.listings.get(server.id);
    return kept !== undefined && kept.key === listingKey(server) ? kept.listing : undefined;
  }

  /** Keep the complete listing of `server`, made while it had the given status. */
  set(server: Pick<protocol.ServerStatus, "id" | "state" | "resources">, listing: CachedListing): void {
    this.listings.set(server.id, { key: listingKey(server), listing });
  }

  /** The server's status changed: its listing goes when it started or stopped running with resources. */
  serverChanged(server: Pick<protocol.ServerStatus, "id" | "state" | "resources">): void {
    const kept = this.listings.get(server.id);
    if (kept !== undefined && kept.key !== listingKey(server)) {
      this.listings.delete(server.id);
    }
  }

  /** Forget one server's listing (its list changed). */
  forget(server: string): void {
    this.listings.delete(server);
  }

  /** Forget everything (the host bridge stopped). */
  clear(): void {
    this.listings.clear();
  }
}
