// The resource picker's logic without the vscode API: its quick pick items (made once per row, so replacing the
// list stays cheap), which item stays highlighted when the list is replaced, its placeholder, the notices that say
// why a server shows nothing, the paging of a listing, how often the list is redrawn while pages arrive, and which
// rows of a long list the window gets (windowRows, filterRows). resourcePicker.ts drives the quick pick.
import type * as vscode from "vscode";
import type { SidecarState } from "../ctx";
import type * as protocol from "../protocol";
import {
  type Notice,
  type Row,
  type RowText,
  type SortedGroup,
  resourceText,
  templateText,
  withServer,
} from "../resources/resourceModel";
import { type MatchRank, type PreparedTexts, prepareTexts, quickPickFilter } from "./quickFilter";
import { resourcesNote, serverLabel } from "../status/statusModel";
import { PRODUCT, noIcons, oneLine, visible } from "../text";
import { listingKey } from "../tree/treeModel";

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
  /** Each item's texts as the filter of a long list looks at them ({@link filterRows}). */
  private readonly texts = new WeakMap<RowItem, PreparedTexts>();

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
      case "more":
        // Not kept: its count changes with every filter.
        return { row, label: `$(search) ${moreText(row)}`, alwaysShow: true };
    }
  }

  /** The texts of `item` prepared for filtering, worked out once per item. */
  prepared(item: RowItem): PreparedTexts {
    let texts = this.texts.get(item);
    if (texts === undefined) {
      texts = prepareTexts(item);
      this.texts.set(item, texts);
    }
    return texts;
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
    case "more":
      return b.kind === "more" && b.server === a.server;
  }
}

/** What a row of rows left out says: how many, and that typing finds them. */
export function moreText(row: Extract<Row, { kind: "more" }>): string {
  const count = row.hidden.toLocaleString("en-US");
  if (row.server === undefined) {
    return `${count} more ${row.hidden === 1 ? "match is" : "matches are"} not shown: type more to narrow the list`;
  }
  const name = noIcons(row.serverLabel ?? row.server);
  return `${count} more of “${name}” ${row.hidden === 1 ? "is" : "are"} not shown: type to find them`;
}

/**
 * The most resources and templates the picker hands the window at once. Every replacement of a quick pick's items
 * sends them all to the window, which filters and draws them anew: about 40 µs an item on a busy machine, 0.4 s
 * for 10 000. A longer list is shown in part ({@link windowRows}) and filtered here as the user types
 * ({@link filterRows}), so the window never holds more than this many.
 */
export const MAX_SHOWN = 1000;

/** How many of each of `counts` to show for `limit` in all: an even share each, what one cannot use to the others. */
export function shares(counts: readonly number[], limit: number): number[] {
  const given = counts.map(() => 0);
  let left = limit;
  let open = counts.flatMap((count, index) => (count > 0 ? [index] : []));
  while (left > 0 && open.length > 0) {
    const each = Math.max(1, Math.floor(left / open.length));
    for (const index of open) {
      const give = Math.min(each, (counts[index] ?? 0) - (given[index] ?? 0), left);
      given[index] = (given[index] ?? 0) + give;
      left -= give;
      if (left === 0) {
        break;
      }
    }
    open = open.filter((index) => (given[index] ?? 0) < (counts[index] ?? 0));
  }
  return given;
}

/**
 * `rows` (a catalog's, without a filter) cut to at most `limit` resources and templates: each server gets an even
 * share (what a server cannot use goes to the others), its templates first (they are few, and cannot be found by
 * name otherwise), then its first resources, and a row saying how many it has besides. Warnings, notices and
 * separators all stay.
 */
export function windowRows(rows: readonly Row[], limit: number, serverLabel?: (server: string) => string): Row[] {
  interface Group {
    readonly head: Row[];
    readonly resources: Row[];
    readonly templates: Row[];
    readonly server?: string;
  }
  const groups: Group[] = [{ head: [], resources: [], templates: [] }];
  for (const row of rows) {
    if (row.kind === "separator") {
      groups.push({ head: [row], resources: [], templates: [], server: row.server });
      continue;
    }
    const group = groups[groups.length - 1];
    if (row.kind === "resource") {
      group?.resources.push(row);
    } else if (row.kind === "template") {
      group?.templates.push(row);
    } else {
      group?.head.push(row);
    }
  }
  const given = shares(
    groups.map((group) => group.resources.length + group.templates.length),
    limit,
  );
  const shown: Row[] = [];
  groups.forEach((group, index) => {
    const share = given[index] ?? 0;
    const templates = Math.min(group.templates.length, share);
    const resources = share - templates;
    const hidden = group.resources.length + group.templates.length - share;
    shown.push(...group.head, ...group.resources.slice(0, resources));
    if (hidden > 0) {
      shown.push({
        kind: "more",
        hidden,
        ...(group.server !== undefined
          ? { server: group.server, serverLabel: serverLabel?.(group.server) ?? group.server }
          : {}),
      });
    }
    shown.push(...group.templates.slice(0, templates));
  });
  return shown;
}

/**
 * The items to show for `filter` out of `items` (every row's, naming its server): the resources and templates the
 * window would keep ({@link quickPickFilter}), VS Code's own matches first, at most `limit` of them, and a row saying
 * how many more match; warnings and notices stay (the window always shows them), separators go (it drops them
 * while filtering).
 */
export function filterRows(
  items: readonly RowItem[],
  filter: string,
  limit: number,
  more: (hidden: number) => RowItem,
  prepared: (item: RowItem) => PreparedTexts = prepareTexts,
): RowItem[] {
  const match = quickPickFilter(filter);
  const kept: RowItem[] = [];
  const ranked: { item: RowItem; rank: MatchRank; index: number }[] = [];
  items.forEach((item, index) => {
    const kind = item.row.kind;
    if (kind === "warning" || kind === "notice") {
      kept.push(item);
    } else if (kind === "resource" || kind === "template") {
      const rank = match === undefined ? 0 : match(prepared(item));
      if (rank !== undefined) {
        ranked.push({ item, rank, index });
      }
    }
  });
  ranked.sort((a, b) => a.rank - b.rank || a.index - b.index);
  kept.push(...ranked.slice(0, limit).map(({ item }) => item));
  if (ranked.length > limit) {
    kept.push(more(ranked.length - limit));
  }
  return kept;
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
 * How long to wait before replacing the list again while pages arrive, for a list of `rows`: every replacement
 * sends the whole list to the window, which filters and draws it anew, so a longer list is replaced less often
 * (100 ms up to 500 rows, then 1 ms more per 5 rows; the picker shows at most {@link MAX_SHOWN}, so at most every
 * 200 ms): the window's work stays a bounded share of the time. The list is replaced at once when the listing
 * ends.
 */
export function renderInterval(rows: number): number {
  return Math.max(RENDER_INTERVAL_MS, Math.round(Math.min(rows, MAX_SHOWN) / 5));
}

/**
 * How many rows the picker shows first when it opens with a long list it kept: enough to fill it, few enough to
 * reach the window at once; the whole list follows right after.
 */
export const FIRST_ROWS = 100;

/** The shortest wait between two replacements of the list while pages arrive. */
export const RENDER_INTERVAL_MS = 100;

/** How a paged listing ended: after its last page, on a cursor seen before, or because it was cancelled. */
export type ListingEnd = "done" | "repeated" | "cancelled";

/**
 * How many resources the first page of a listing asks for: enough to fill the picker, few enough to come back at
 * once (the sidecar answers from the lists it keeps).
 */
export const FIRST_PAGE = 100;

/** How many resources each later page asks for: the sidecar's most, so a kept list comes in one more answer. */
export const PAGE_LIMIT = 10_000;

/**
 * Fetch every page of resources for `params`, handing each to `onPage` as it comes, until the last one, a
 * cursor that was handed out before (the listing would never end), or `cancelled()` after a fetch. The first page
 * asks for {@link FIRST_PAGE} resources, the others for {@link PAGE_LIMIT}.
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
    const page = await fetch(
      cursor === undefined ? { ...params, limit: FIRST_PAGE } : { ...params, cursor, limit: PAGE_LIMIT },
    );
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

/** What one listing of a server brought, in the order listed. */
export interface Listed {
  readonly resources: readonly protocol.ResourceItem[];
  readonly templates: readonly protocol.TemplateItem[];
}

/** One server's complete listing as the picker keeps it: its rows, sorted, and the items they were made from. */
export interface CachedListing extends Listed {
  readonly group: SortedGroup;
}

/**
 * Whether two listings of a server hold the same items in the same order: a fresh one equal to the kept one changes
 * nothing. Field by field (values that are objects as JSON), which for 10 000 resources takes a few milliseconds.
 */
export function sameListing(a: Listed, b: Listed): boolean {
  return sameItems(a.resources, b.resources) && sameItems(a.templates, b.templates);
}

function sameItems(a: readonly object[], b: readonly object[]): boolean {
  if (a.length !== b.length) {
    return false;
  }
  for (let index = 0; index < a.length; index += 1) {
    const left = a[index];
    const right = b[index];
    if (left !== right && (left === undefined || right === undefined || !sameFields(left, right))) {
      return false;
    }
  }
  return true;
}

function sameFields(a: object, b: object): boolean {
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) {
    return false;
  }
  return keys.every((key) => {
    const x = left[key];
    const y = right[key];
    return (
      x === y ||
      (typeof x === "object" &&
        typeof y === "object" &&
        x !== null &&
        y !== null &&
        JSON.stringify(x) === JSON.stringify(y))
    );
  });
}

/** The status fields a kept listing holds for: the server's connection, and the folders shared with it. */
export type MirrorStatus = Pick<protocol.ServerStatus, "id" | "state" | "resources" | "sharedRoots">;

/**
 * What a kept listing of a server holds for ({@link ListingCache}): the server runs with the same resources
 * capability (the same connection, {@link listingKey}) and is shared the same folders. A listing made before the
 * user unshared a folder may hold resources of that folder, so it is never shown once the folders changed.
 */
export function mirrorKey(server: MirrorStatus): string {
  const roots = server.sharedRoots.map((root) => root.uri).sort();
  return JSON.stringify([listingKey(server), roots]);
}

/**
 * The last complete listing of each server, kept between openings of the picker (and fetched ahead of them) so
 * that it opens with every row at once. A listing holds only for the server's connection it came from and the
 * folders shared with it then ({@link mirrorKey}); it is forgotten when the server says its list changed, and
 * everything is forgotten when the host bridge stops (a new process has new connections).
 */
export class ListingCache {
  private readonly listings = new Map<string, { key: string; listing: CachedListing }>();

  /** The listing of `server` if one was kept for its current connection and shared folders. */
  get(server: MirrorStatus): CachedListing | undefined {
    const kept = this.listings.get(server.id);
    return kept !== undefined && kept.key === mirrorKey(server) ? kept.listing : undefined;
  }

  /** Keep the complete listing of `server`, made while it had the given status. */
  set(server: MirrorStatus, listing: CachedListing): void {
    this.listings.set(server.id, { key: mirrorKey(server), listing });
  }

  /**
   * The server's status changed: its listing goes when it started or stopped running with resources, or the
   * folders shared with it changed. Whether it went.
   */
  serverChanged(server: MirrorStatus): boolean {
    const kept = this.listings.get(server.id);
    if (kept !== undefined && kept.key !== mirrorKey(server)) {
      this.listings.delete(server.id);
      return true;
    }
    return false;
  }

  /** Forget one server's listing (its list changed). */
  forget(server: string): void {
    this.listings.delete(server);
  }

  /** Forget everything (the host bridge stopped). */
  clear(): void {
    this.listings.clear();
  }

  /** How many resources and templates are kept, over every server. */
  get size(): number {
    let count = 0;
    for (const { listing } of this.listings.values()) {
      count += listing.resources.length + listing.templates.length;
    }
    return count;
  }
}
