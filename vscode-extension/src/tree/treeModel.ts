// The resource tree's state without the `vscode` API: per-server pages loaded on demand and appended,
// templates loaded once, how a server node looks, and which rows sit under a server.
import type { SidecarState } from "../ctx";
import type { ResourceItem, ResourcePage, ServerStatus, TemplateItem } from "../protocol";
import { foldersText, sandboxText, serverLabel, stateLabel } from "../status/statusModel";
import { errorMessage } from "../text";
import { type WaitingForTrust, waitingSentence } from "../consent/workspaceTrustModel";

/** Fetches one page of a server's resources; `cursor` is undefined for the first page. */
export type PageFetcher = (cursor: string | undefined) => Promise<ResourcePage>;

/**
 * The pages of one server's resource list, appended in order. A reset drops everything and makes answers
 * still in flight count for nothing, so a list that changed is never mixed with the old one.
 */
export class ResourcePager {
  private readonly loadedItems: ResourceItem[] = [];
  private readonly pageWarnings: string[] = [];
  private cursor: string | undefined;
  private first: Promise<void> | undefined;
  private pending: Promise<void> | undefined;
  private generation = 0;
  private failure: string | undefined;

  constructor(private readonly fetchPage: PageFetcher) {}

  /** Every resource loaded so far, pages in order. */
  get items(): readonly ResourceItem[] {
    return this.loadedItems;
  }

  /** The sidecar's sentences about a cut-short listing, from every page loaded. */
  get warnings(): readonly string[] {
    return this.pageWarnings;
  }

  /** Why the last page could not be loaded; cleared when a page loads. */
  get error(): string | undefined {
    return this.failure;
  }

  /** The first page was asked for and answered (or failed). */
  get loaded(): boolean {
    return this.first !== undefined && this.pending !== this.first;
  }

  /** A page is being fetched. */
  get loading(): boolean {
    return this.pending !== undefined;
  }

  /** The server said there is another page (also true after a failed "load more", so it can be retried). */
  get hasMore(): boolean {
    return this.cursor !== undefined;
  }

  /** Load the first page unless it is loaded or loading; resolves when it is (not waiting for a next page). */
  load(): Promise<void> {
    this.first ??= this.fetch(undefined);
    return this.first;
  }

  /** Append the next page if there is one; a request already in flight is shared, not repeated. */
  loadMore(): Promise<void> {
    if (this.first === undefined) {
      return this.load();
    }
    if (this.pending !== undefined) {
      return this.pending;
    }
    return this.cursor === undefined ? Promise.resolve() : this.fetch(this.cursor);
  }

  /** Forget every page: the next {@link load} starts over. */
  reset(): void {
    this.generation += 1;
    this.loadedItems.length = 0;
    this.pageWarnings.length = 0;
    this.cursor = undefined;
    this.first = undefined;
    this.pending = undefined;
    this.failure = undefined;
  }

  private fetch(cursor: string | undefined): Promise<void> {
    const generation = this.generation;
    const run = async (): Promise<void> => {
      try {
        const page = await this.fetchPage(cursor);
        if (generation !== this.generation) {
          return;
        }
        this.loadedItems.push(...page.items);
        this.pageWarnings.push(...page.warnings);
        this.cursor = page.nextCursor;
        this.failure = undefined;
      } catch (error) {
        if (generation === this.generation) {
          this.failure = errorMessage(error);
        }
      } finally {
        if (generation === this.generation) {
          this.pending = undefined;
        }
      }
    };
    this.pending = run();
    return this.pending;
  }
}

/** The settled result of a one-time load. */
export type Loaded<T> = { ok: true; value: T } | { ok: false; error: string };

/** A value loaded once and kept until {@link reset}; a failure is kept too, so it is not retried on every render. */
export class LazyValue<T> {
  private promise: Promise<Loaded<T>> | undefined;

  constructor(private readonly loader: () => Promise<T>) {}

  /** The value, loading it on the first call after construction or a reset. */
  get(): Promise<Loaded<T>> {
    this.promise ??= this.loader().then(
      (value): Loaded<T> => ({ ok: true, value }),
      (error: unknown): Loaded<T> => ({ ok: false, error: errorMessage(error) }),
    );
    return this.promise;
  }

  /** Drop the value; the next {@link get} loads it again (a load in flight still answers its own callers). */
  reset(): void {
    this.promise = undefined;
  }
}

/** One row under a server node, in display order. */
export type ServerRow =
  | { kind: "templates"; items: readonly TemplateItem[] }
  | { kind: "resource"; item: ResourceItem }
  | { kind: "warning"; text: string }
  | { kind: "error"; text: string }
  | { kind: "loadMore"; loading: boolean }
  | { kind: "empty"; text: string };

/**
 * The rows under a running server: a "Templates" folder first (so it does not move as pages are appended),
 * then the resources, the listing's warnings, the last error, and "Load more…" while there is a next page.
 */
export function serverRows(pager: ResourcePager, templates: Loaded<readonly TemplateItem[]>): ServerRow[] {
  const rows: ServerRow[] = [];
  if (!templates.ok) {
    rows.push({ kind: "error", text: `Templates could not be listed: ${templates.error}` });
  } else if (templates.value.length > 0) {
    rows.push({ kind: "templates", items: templates.value });
  }
  for (const item of pager.items) {
    rows.push({ kind: "resource", item });
  }
  for (const text of pager.warnings) {
    rows.push({ kind: "warning", text });
  }
  if (pager.error !== undefined) {
    rows.push({ kind: "error", text: pager.error });
  }
  if (pager.hasMore) {
    rows.push({ kind: "loadMore", loading: pager.loading });
  }
  if (rows.length === 0) {
    rows.push({ kind: "empty", text: "This server lists no resources." });
  }
  return rows;
}

/** Icon of a server node: a codicon id and an optional theme color id. */
export interface IconView {
  id: string;
  color?: string;
}

/** How a server node looks and whether it can be expanded. */
export interface ServerNodeView {
  label: string;
  description: string;
  tooltip: string;
  icon: IconView;
  /** Whether it has children: a running server with resources, or a server that is not running (its reason). */
  expandable: boolean;
  /** The only child of a server that is not running: why it shows no resources. */
  notRunningMessage?: string;
}

/**
 * The server node for a server status; its tooltip says what its folders are to it (offered or shared, and
 * whether it asked for them) and its sandbox.
 */
export function serverNodeView(server: ServerStatus, now: Date = new Date()): ServerNodeView {
  const state = stateLabel(server.state);
  const tooltipLines = [`${serverLabel(server)} (${server.id}) — ${state}`, foldersText(server, now)];
  const sandbox = sandboxText(server);
  if (sandbox !== undefined) {
    tooltipLines.push(sandbox);
  }
  if (server.lastError !== undefined) {
    tooltipLines.push(server.lastError);
  }
  const base = { label: serverLabel(server), tooltip: tooltipLines.join("\n"), icon: stateIcon(server) };
  if (server.state === "running") {
    return server.resources === undefined
      ? { ...base, description: `${state} · no resources`, expandable: false }
      : { ...base, description: state, expandable: true };
  }
  return { ...base, description: state, expandable: true, notRunningMessage: notRunningMessage(server) };
}

function notRunningMessage(server: ServerStatus): string {
  switch (server.state) {
    case "awaitingTrust":
      return "Server not running: it waits for you to trust its workspace configuration.";
    case "awaitingFolders":
      return 'Server not running: it waits for you to share a folder with it ("MCP: Manage Shared Folders").';
    case "starting":
    case "restarting":
      return "Server not running yet: its resources appear when it has started.";
    case "failed":
      return server.lastError === undefined
        ? 'Server not running: it failed; run "MCP: Show Server Status" to restart it.'
        : `Server not running: ${server.lastError}`;
    default:
      return 'Server not running; run "MCP: Show Server Status" to restart it.';
  }
}

function stateIcon(server: ServerStatus): IconView {
  switch (server.state) {
    case "running":
      return { id: "vm-running", color: "testing.iconPassed" };
    case "starting":
    case "restarting":
      return { id: "loading~spin" };
    case "awaitingTrust":
      return { id: "shield", color: "list.warningForeground" };
    case "awaitingFolders":
      return { id: "folder", color: "list.warningForeground" };
    case "failed":
      return { id: "error", color: "list.errorForeground" };
    case "stopped":
      return { id: "debug-stop" };
  }
}

/** What of a server's status decides its resource list: whether it runs, and its resources capability. */
export type ListingKey = string;

/** The {@link ListingKey} of a server status. */
export function listingKey(server: Pick<ServerStatus, "state" | "resources">): ListingKey {
  return JSON.stringify([server.state === "running", server.resources ?? null]);
}

/**
 * Whether a server's loaded pages are stale after a status change: only when it started or stopped running
 * or its resources capability changed (a new connection); not when its shared folders or last error changed.
 * `before` is undefined for a server not seen before.
 */
export function pagesStale(before: ListingKey | undefined, after: Pick<ServerStatus, "state" | "resources">): boolean {
  return before !== listingKey(after);
}

/**
 * The message above the tree when it has no servers to show, or when servers of the workspace's files wait for
 * workspace trust (`waiting`); undefined otherwise.
 */
export function treeMessage(
  sidecar: SidecarState,
  serverCount: number,
  waiting: WaitingForTrust = [],
): string | undefined {
  const untrusted = waitingSentence(waiting, false);
  if (sidecar.kind === "running" && untrusted !== "") {
    return untrusted;
  }
  switch (sidecar.kind) {
    case "starting":
      return serverCount === 0 ? "The MCP host bridge is starting…" : undefined;
    case "stopped":
      return 'The MCP host bridge is stopped; run "MCP: Restart Host Bridge".';
    case "failed":
      return `The MCP host bridge failed: ${sidecar.reason} Run "MCP: Restart Host Bridge" after fixing it.`;
    case "running":
      return serverCount === 0
        ? "No MCP servers are configured. Add them in the hostBridge.servers setting or in .vscode/mcp.json."
        : undefined;
  }
}
