// What "MCP: Pick Resource" lists, without the vscode API: resources and templates gathered page by page,
// grouped by server in configuration order, ordered by priority then name, and the text of each row.
// Pages are merged into each server's sorted list, so a listing of tens of thousands of items stays linear
// per page instead of re-sorting everything.
import { formatSize } from "./mime";
import type * as protocol from "../protocol";
import { lastSegment } from "./resourceUri";
import { escapeMarkdown, noIcons } from "../text";

/**
 * Why a server (or, without `server`, the whole picker) shows no resources: it is starting, awaits trust, failed,
 * offers none … A notice row is no resource: picking it leads to the servers' status.
 */
export interface Notice {
  readonly text: string;
  readonly severity: "info" | "warning";
}

/** A row of the picker. */
export type Row =
  | { readonly kind: "separator"; readonly server: string; readonly label: string }
  | { readonly kind: "warning"; readonly text: string }
  | ({ readonly kind: "notice"; readonly server?: string } & Notice)
  | { readonly kind: "resource"; readonly item: protocol.ResourceItem }
  | { readonly kind: "template"; readonly item: protocol.TemplateItem }
  | {
      /** Rows left out of a list too long to show whole: of `server`, or (without) matches of the filter. */
      readonly kind: "more";
      readonly server?: string;
      readonly serverLabel?: string;
      readonly hidden: number;
    };

/** Priority assumed for a resource without `annotations.priority` (the middle of MCP's 0…1 range). */
export const DEFAULT_PRIORITY = 0.5;

/** A resource's `annotations.priority` when it is a number, else {@link DEFAULT_PRIORITY}. */
export function priorityOf(item: protocol.ResourceItem): number {
  const priority = item.annotations?.["priority"];
  return typeof priority === "number" && Number.isFinite(priority) ? priority : DEFAULT_PRIORITY;
}

/** What a row shows as its name: the title, else the name. */
export function displayName(item: { name: string; title?: string }): string {
  return item.title !== undefined && item.title !== "" ? item.title : item.name;
}

/**
 * A string whose plain `<` order is the natural, case- and accent-insensitive order of names: "file2"
 * before "File10", "élan" beside "elan". Computed once per item, so sorting tens of thousands stays fast.
 */
export function nameKey(name: string): string {
  // Printable ASCII has nothing to decompose nor accents to drop (most names are, and this runs for every resource).
  const base = ASCII.test(name) ? name : name.normalize("NFKD").replace(/\p{M}+/gu, "");
  return base.toLowerCase().replace(/\d+/g, (digits) => digits.replace(/^0+(?=\d)/, "").padStart(16, "0"));
}

const ASCII = /^[ -~\t\n\r]*$/;

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** An item with its sort keys worked out. */
export interface Keyed<T> {
  readonly item: T;
  readonly priority: number;
  readonly key: string;
  readonly tie: string;
}

function keyedResource(item: protocol.ResourceItem): Keyed<protocol.ResourceItem> {
  return { item, priority: priorityOf(item), key: nameKey(displayName(item)), tie: item.uri };
}

function keyedTemplate(item: protocol.TemplateItem): Keyed<protocol.TemplateItem> {
  return { item, priority: 0, key: nameKey(displayName(item)), tie: item.uriTemplate };
}

function compareKeyed<T>(a: Keyed<T>, b: Keyed<T>): number {
  return b.priority - a.priority || compareStrings(a.key, b.key) || compareStrings(a.tie, b.tie);
}

/** Higher priority first, then by displayed name (natural order, ignoring case and accents), then by URI. */
export function compareResources(a: protocol.ResourceItem, b: protocol.ResourceItem): number {
  return compareKeyed(keyedResource(a), keyedResource(b));
}

/** Templates by displayed name, then by template. */
export function compareTemplates(a: protocol.TemplateItem, b: protocol.TemplateItem): number {
  return compareKeyed(keyedTemplate(a), keyedTemplate(b));
}

/**
 * Merge two lists sorted by `compare` into one sorted list (stable: `left` first on ties). Each item of
 * `right` finds its place by binary search, so merging a page of k items into n costs k·log n comparisons.
 */
export function mergeSorted<T>(left: readonly T[], right: readonly T[], compare: (a: T, b: T) => number): T[] {
  const merged: T[] = [];
  let from = 0;
  for (const item of right) {
    // First index in left[from…] whose element sorts after `item`.
    let low = from;
    let high = left.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare(item, left[middle]) < 0) {
        high = middle;
      } else {
        low = middle + 1;
      }
    }
    for (let index = from; index < low; index += 1) {
      merged.push(left[index]);
    }
    merged.push(item);
    from = low;
  }
  for (let index = from; index < left.length; index += 1) {
    merged.push(left[index]);
  }
  return merged;
}

/** `items` keyed for sorting, by server, in first-seen order. */
function keyedByServer<T extends { server: string }>(
  items: readonly T[],
  keyed: (item: T) => Keyed<T>,
): Map<string, Keyed<T>[]> {
  const byServer = new Map<string, Keyed<T>[]>();
  for (const item of items) {
    const list = byServer.get(item.server) ?? [];
    list.push(keyed(item));
    byServer.set(item.server, list);
  }
  return byServer;
}

interface ServerGroup {
  resources: Keyed<protocol.ResourceItem>[];
  templates: Keyed<protocol.TemplateItem>[];
}

/** One server's rows as a catalog keeps them, sorted: another catalog takes them without sorting again. */
export interface SortedGroup {
  readonly resources: readonly Keyed<protocol.ResourceItem>[];
  readonly templates: readonly Keyed<protocol.TemplateItem>[];
}

function sameNotice(a: Notice | undefined, b: Notice | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && a.text === b.text && a.severity === b.severity);
}

/**
 * Resources, templates, warnings and notices of one listing. `serverOrder` and `serverLabel` come from the known
 * server states; servers not in the order follow in first-seen order.
 */
export class ResourceCatalog {
  private readonly groups = new Map<string, ServerGroup>();
  private readonly warningList: string[] = [];
  /** Per server, why it shows nothing (shown only while its group is empty). */
  private readonly notices = new Map<string, Notice>();
  /** Notices about the whole picker (the host bridge is starting …), shown after the warnings. */
  private generalNotices: readonly Notice[] = [];
  private cachedRows: Row[] | undefined;

  constructor(
    private serverOrder: readonly string[] = [],
    private readonly serverLabel: (server: string) => string = (server) => server,
  ) {}

  /** The servers' configuration order changed (a server was added while the picker is open). */
  setServerOrder(order: readonly string[]): void {
    if (order.length !== this.serverOrder.length || order.some((server, index) => server !== this.serverOrder[index])) {
      this.serverOrder = [...order];
      this.cachedRows = undefined;
    }
  }

  /** Say why `server` shows nothing, or take that back (`undefined`); shown under its name while it lists nothing. */
  setNotice(server: string, notice: Notice | undefined): void {
    if (sameNotice(this.notices.get(server), notice)) {
      return;
    }
    if (notice === undefined) {
      this.notices.delete(server);
    } else {
      this.notices.set(server, notice);
    }
    this.cachedRows = undefined;
  }

  /** Replace the notices about the whole picker. */
  setGeneralNotices(notices: readonly Notice[]): void {
    if (
      notices.length !== this.generalNotices.length ||
      notices.some((notice, index) => !sameNotice(notice, this.generalNotices[index]))
    ) {
      this.generalNotices = [...notices];
      this.cachedRows = undefined;
    }
  }

  /** How many notices show now (a server's only while it lists nothing). */
  get noticeCount(): number {
    let count = this.generalNotices.length;
    for (const server of this.notices.keys()) {
      if (this.itemCount(server) === 0) {
        count += 1;
      }
    }
    return count;
  }

  /** Forget every resource, template and warning (a new host bridge process lists everything afresh). */
  clear(): void {
    this.groups.clear();
    this.warningList.length = 0;
    this.cachedRows = undefined;
  }

  /** How many resources and templates have arrived. */
  get size(): number {
    let count = 0;
    for (const group of this.groups.values()) {
      count += group.resources.length + group.templates.length;
    }
    return count;
  }

  /** The warnings so far, without repeats. */
  get warnings(): readonly string[] {
    return this.warningList;
  }

  /** Add one page of `hostBridge/listResources`. */
  addResources(items: readonly protocol.ResourceItem[]): void {
    for (const [server, list] of keyedByServer(items, keyedResource)) {
      const group = this.group(server);
      group.resources = mergeSorted(group.resources, list.sort(compareKeyed), compareKeyed);
    }
    this.cachedRows = undefined;
  }

  /** Add the result of `hostBridge/listResourceTemplates`. */
  addTemplates(items: readonly protocol.TemplateItem[]): void {
    for (const [server, list] of keyedByServer(items, keyedTemplate)) {
      const group = this.group(server);
      group.templates = mergeSorted(group.templates, list.sort(compareKeyed), compareKeyed);
    }
    this.cachedRows = undefined;
  }

  /**
   * Replace everything listed for `server` with a fresh listing of it (after it said its list changed);
   * items of other servers are ignored.
   */
  replaceServer(
    server: string,
    resources: readonly protocol.ResourceItem[],
    templates: readonly protocol.TemplateItem[],
  ): void {
    const group = this.group(server);
    group.resources = resources
      .filter((item) => item.server === server)
      .map(keyedResource)
      .sort(compareKeyed);
    group.templates = templates
      .filter((item) => item.server === server)
      .map(keyedTemplate)
      .sort(compareKeyed);
    this.cachedRows = undefined;
  }

  /** The sorted rows of `server`, to hand to another catalog ({@link setSortedGroup}); `undefined` when it has none. */
  sortedGroup(server: string): SortedGroup | undefined {
    const group = this.groups.get(server);
    return group === undefined ? undefined : { resources: [...group.resources], templates: [...group.templates] };
  }

  /** Show `group` (from {@link sortedGroup}) as everything `server` has, in place of what it had. */
  setSortedGroup(server: string, group: SortedGroup): void {
    this.groups.set(server, { resources: [...group.resources], templates: [...group.templates] });
    this.cachedRows = undefined;
  }

  /** Add warnings of a page (a server failed, pagination repeated …); repeats are dropped. */
  addWarnings(warnings: readonly string[]): void {
    for (const warning of warnings) {
      if (!this.warningList.includes(warning)) {
        this.warningList.push(warning);
        this.cachedRows = undefined;
      }
    }
  }

  /**
   * The rows to show: warnings and the general notices first, then per server a separator and its resources,
   * then its templates, or the notice that says why it has none. The same array is returned until something
   * changes.
   */
  rows(): readonly Row[] {
    if (this.cachedRows !== undefined) {
      return this.cachedRows;
    }
    const rows: Row[] = this.warningList.map((text) => ({ kind: "warning", text }));
    for (const notice of this.generalNotices) {
      rows.push({ kind: "notice", ...notice });
    }
    for (const server of this.orderedServers()) {
      const group = this.groups.get(server);
      const notice = this.notices.get(server);
      if (group === undefined || group.resources.length + group.templates.length === 0) {
        if (notice !== undefined) {
          rows.push({ kind: "separator", server, label: this.serverLabel(server) });
          rows.push({ kind: "notice", server, ...notice });
        }
        continue;
      }
      rows.push({ kind: "separator", server, label: this.serverLabel(server) });
      for (const { item } of group.resources) {
        rows.push({ kind: "resource", item });
      }
      for (const { item } of group.templates) {
        rows.push({ kind: "template", item });
      }
    }
    this.cachedRows = rows;
    return rows;
  }

  private itemCount(server: string): number {
    const group = this.groups.get(server);
    return group === undefined ? 0 : group.resources.length + group.templates.length;
  }

  private orderedServers(): string[] {
    const shown = (server: string): boolean => this.groups.has(server) || this.notices.has(server);
    const known = this.serverOrder.filter(shown);
    const rest = [...new Set([...this.groups.keys(), ...this.notices.keys()])].filter(
      (server) => !this.serverOrder.includes(server),
    );
    return [...known, ...rest];
  }

  private group(server: string): ServerGroup {
    let group = this.groups.get(server);
    if (group === undefined) {
      group = { resources: [], templates: [] };
      this.groups.set(server, group);
    }
    return group;
  }
}

/** The texts of one picker row for a resource or template: label, description and detail (never icons). */
export interface RowText {
  readonly label: string;
  readonly description: string;
  readonly detail: string;
}

/**
 * What a resource row shows: the title (else name) as label; the name when a title hides it, the MIME
 * type, the size and the description, joined by " · "; the URI as detail.
 */
export function resourceText(item: protocol.ResourceItem): RowText {
  const label = displayName(item);
  const parts: string[] = [];
  if (label !== item.name) {
    parts.push(item.name);
  }
  if (item.mimeType !== undefined) {
    parts.push(item.mimeType);
  }
  if (item.size !== undefined) {
    parts.push(formatSize(item.size));
  }
  if (item.description !== undefined && item.description !== "") {
    parts.push(item.description);
  }
  return { label: noIcons(label), description: noIcons(parts.join(" · ")), detail: noIcons(item.uri) };
}

/** What a template row shows: like a resource, marked "template", with the URI template as detail. */
export function templateText(item: protocol.TemplateItem): RowText {
  const label = displayName(item);
  const parts: string[] = ["template"];
  if (label !== item.name) {
    parts.push(item.name);
  }
  if (item.mimeType !== undefined) {
    parts.push(item.mimeType);
  }
  if (item.description !== undefined && item.description !== "") {
    parts.push(item.description);
  }
  return { label: noIcons(label), description: noIcons(parts.join(" · ")), detail: noIcons(item.uriTemplate) };
}

/**
 * A row's text with its server's label in front of the description. A quick pick sorts matches by label
 * and drops the server separators as soon as the user types, so while filtering each row names its server.
 */
export function withServer(text: RowText, serverLabel: string): RowText {
  const server = noIcons(serverLabel);
  return { ...text, description: text.description === "" ? server : `${server} · ${text.description}` };
}

/** A Markdown link to a resource: the name shown literally (on one line), characters that end a link target encoded. */
export function markdownLink(name: string, target: string): string {
  const text = escapeMarkdown(name.replace(/[\r\n]+/g, " "));
  const href = target.replace(
    /[ ()<>\r\n]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
  );
  return `[${text}](${href})`;
}

/** "<name>: <mime type>, <size>" for a binary resource that cannot be shown. */
export function binarySummary(name: string, mimeType: string | undefined, bytes: number): string {
  return `${name}: ${mimeType ?? "unknown type"}, ${formatSize(bytes)}`;
}

/**
 * What to call the resource a template was read as: the last segment of its URI when that looks like a file
 * name (`data.bin`), else the template's name followed by that segment (`Dynamic Blob Resource 5`).
 */
export function templateResultName(template: { name: string; title?: string }, resultUri: string): string {
  const segment = lastSegment(resultUri);
  const name = displayName(template);
  if (segment === undefined) {
    return name;
  }
  return /\.[A-Za-z0-9]+$/.test(segment) ? segment : `${name} ${segment}`;
}

/** A row of a template variable's picker: the value it stands for and how it shows. */
export interface ArgumentChoice {
  readonly value: string;
  readonly label: string;
  readonly description?: string;
  readonly alwaysShow: true;
}

/**
 * The rows of a template variable's picker: the value as typed (unless a suggestion is the same), then the
 * server's suggestions, which it already filtered by what was typed (so the picker must not hide any).
 */
export function argumentChoices(typed: string, suggestions: readonly string[]): ArgumentChoice[] {
  const choices: ArgumentChoice[] = [];
  if (!suggestions.includes(typed)) {
    choices.push({
      value: typed,
      label: typed === "" ? "(empty)" : noIcons(typed),
      description: "the value as typed",
      alwaysShow: true,
    });
  }
  for (const value of suggestions) {
    choices.push({ value, label: noIcons(value), alwaysShow: true });
  }
  return choices;
}

/** The values of the variables before `index` that have one: what a completion of variable `index` may use. */
export function knownArguments(
  variables: readonly string[],
  values: Readonly<Record<string, string>>,
  index: number,
): Record<string, string> {
  const known: Record<string, string> = {};
  for (const earlier of variables.slice(0, index)) {
    const value = values[earlier];
    if (value !== undefined) {
      known[earlier] = value;
    }
  }
  return known;
}

/** A resource to open or insert: what the tree and the picker know about it; `result` when already read. */
export interface OpenTarget {
  readonly server: string;
  readonly uri: string;
  readonly name?: string;
  readonly mimeType?: string;
  readonly result?: protocol.ReadResult;
}

/**
 * Narrow a command argument to a resource to open: a `ResourceItem`, `{server, uri, name?, mimeType?}`,
 * or a tree node carrying one of those as `item` or `resource`. `undefined` for anything else.
 */
export function asOpenTarget(value: unknown): OpenTarget | undefined {
  if (typeof value !== "object" || value === null) {
    return undefined;
  }
  const record = value as Record<string, unknown>;
  if (typeof record["server"] !== "string") {
    for (const nested of [record["item"], record["resource"]]) {
      if (typeof nested === "object" && nested !== null) {
        return asOpenTarget(nested);
      }
    }
    return undefined;
  }
  const { server, uri, name, title, mimeType } = record;
  if (typeof server !== "string" || server === "" || typeof uri !== "string" || uri === "") {
    return undefined;
  }
  const shownName =
    typeof name === "string" && name !== ""
      ? displayName({ name, ...(typeof title === "string" ? { title } : {}) })
      : undefined;
  return {
    server,
    uri,
    ...(shownName !== undefined ? { name: shownName } : {}),
    ...(typeof mimeType === "string" && mimeType !== "" ? { mimeType } : {}),
  };
}
