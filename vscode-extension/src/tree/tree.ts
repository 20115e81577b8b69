// The Explorer view "MCP Resources": servers at the root, each running server's resources loaded a page
// at a time, and its templates in a folder. Paging state and node looks come from treeModel.ts.
import * as vscode from "vscode";
import type { CommandId } from "../commandIds";
import type { Ctx } from "../ctx";
import type { WorkspaceTrustWait } from "../consent/workspaceTrust";
import * as protocol from "../protocol";
import { displayName } from "../resources/resourceModel";
import {
  LazyValue,
  ResourcePager,
  type ListingKey,
  type ServerRow,
  listingKey,
  pagesStale,
  serverNodeView,
  serverRows,
  treeMessage,
} from "./treeModel";

const OPEN_RESOURCE: CommandId = "hostBridge.openResource";
const LOAD_MORE: CommandId = "hostBridge.loadMore";

type Node =
  | { kind: "server"; id: string }
  | { kind: "templates"; server: string; items: readonly protocol.TemplateItem[] }
  | { kind: "template"; item: protocol.TemplateItem }
  | { kind: "resource"; item: protocol.ResourceItem }
  | { kind: "loadMore"; server: string; loading: boolean }
  | { kind: "message"; text: string; icon: "error" | "warning" | "info" };

/** What the tree keeps per server: its resource pages and its templates. */
interface ServerCache {
  pager: ResourcePager;
  templates: LazyValue<readonly protocol.TemplateItem[]>;
}

class ResourceTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  /** Server nodes are kept so a refresh of one server can name the very object the view knows. */
  private readonly serverNodes = new Map<string, Node & { kind: "server" }>();
  private readonly caches = new Map<string, ServerCache>();

  constructor(private readonly ctx: Ctx) {}

  /** Drop one server's loaded pages and redraw its node. */
  refreshServer(id: string): void {
    this.forget(id);
    this.changed.fire(this.serverNodes.get(id));
  }

  /** Redraw one server's node (its look and, when expanded, its children), keeping loaded pages. */
  redrawServer(id: string): void {
    const node = this.serverNodes.get(id);
    // A server the view does not show yet is a new root: only a full redraw adds it.
    this.changed.fire(node);
  }

  private forget(id: string): void {
    this.caches.get(id)?.pager.reset();
    this.caches.get(id)?.templates.reset();
  }

  /** Drop every loaded page and redraw the whole tree. */
  refreshAll(): void {
    for (const cache of this.caches.values()) {
      cache.pager.reset();
      cache.templates.reset();
    }
    this.changed.fire(undefined);
  }

  /** Redraw the whole tree, keeping loaded pages. */
  redraw(): void {
    this.changed.fire(undefined);
  }

  /** Append the next page of a server's resources. */
  async loadMore(server: string): Promise<void> {
    const pager = this.cache(server).pager;
    const loading = pager.loadMore();
    this.changed.fire(this.serverNodes.get(server));
    await loading;
    this.changed.fire(this.serverNodes.get(server));
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case "server":
        return this.serverItem(node.id);
      case "templates": {
        const item = new vscode.TreeItem("Templates", vscode.TreeItemCollapsibleState.Collapsed);
        item.iconPath = new vscode.ThemeIcon("symbol-namespace");
        item.description = `${node.items.length}`;
        item.tooltip = "Resource templates: URIs with variables you fill in when picking a resource.";
        return item;
      }
      case "template": {
        const item = new vscode.TreeItem(displayName(node.item));
        item.iconPath = new vscode.ThemeIcon("symbol-parameter");
        item.description = node.item.uriTemplate;
        item.tooltip = lines(node.item.uriTemplate, node.item.description);
        const name = displayName(node.item);
        item.accessibilityInformation = spoken(name, "template", node.item.uriTemplate, node.item.description);
        return item;
      }
      case "resource": {
        const item = new vscode.TreeItem(displayName(node.item));
        item.iconPath = vscode.ThemeIcon.File;
        item.description = node.item.mimeType;
        item.tooltip = lines(node.item.uri, node.item.description);
        const name = displayName(node.item);
        item.accessibilityInformation = spoken(name, node.item.mimeType, node.item.uri, node.item.description);
        item.contextValue = "hostBridge.resource";
        item.command = { command: OPEN_RESOURCE, title: "Open Resource", arguments: [node.item] };
        return item;
      }
      case "loadMore": {
        const item = new vscode.TreeItem(node.loading ? "Loading more…" : "Load more…");
        item.iconPath = new vscode.ThemeIcon(node.loading ? "loading~spin" : "ellipsis");
        if (!node.loading) {
          item.command = { command: LOAD_MORE, title: "Load More", arguments: [node.server] };
        }
        return item;
      }
      case "message": {
        const item = new vscode.TreeItem(node.text);
        item.tooltip = node.text;
        item.iconPath = new vscode.ThemeIcon(node.icon, messageColor(node.icon));
        return item;
      }
    }
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (node === undefined) {
      return this.roots();
    }
    switch (node.kind) {
      case "server":
        return this.serverChildren(node.id);
      case "templates":
        return node.items.map((item) => ({ kind: "template", item }));
      default:
        return [];
    }
  }

  private roots(): Node[] {
    for (const id of this.serverNodes.keys()) {
      if (!this.ctx.servers.has(id)) {
        this.serverNodes.delete(id);
        this.caches.delete(id);
      }
    }
    const roots: Node[] = [];
    for (const id of this.ctx.servers.keys()) {
      let serverNode = this.serverNodes.get(id);
      if (serverNode === undefined) {
        serverNode = { kind: "server", id };
        this.serverNodes.set(id, serverNode);
      }
      roots.push(serverNode);
    }
    return roots;
  }

  private serverItem(id: string): vscode.TreeItem {
    const server = this.ctx.servers.get(id);
    if (server === undefined) {
      return new vscode.TreeItem(id);
    }
    const view = serverNodeView(server);
    const item = new vscode.TreeItem(
      view.label,
      view.expandable ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `server:${id}`;
    item.description = view.description;
    item.tooltip = view.tooltip;
    item.iconPath = new vscode.ThemeIcon(
      view.icon.id,
      view.icon.color === undefined ? undefined : new vscode.ThemeColor(view.icon.color),
    );
    item.contextValue = `hostBridge.server.${server.state}`;
    return item;
  }

  private async serverChildren(id: string): Promise<Node[]> {
    const server = this.ctx.servers.get(id);
    if (server === undefined) {
      return [];
    }
    const view = serverNodeView(server);
    if (view.notRunningMessage !== undefined) {
      return [{ kind: "message", text: view.notRunningMessage, icon: "info" }];
    }
    const cache = this.cache(id);
    const [templates] = await Promise.all([cache.templates.get(), cache.pager.load()]);
    return serverRows(cache.pager, templates).map((row) => toNode(id, row));
  }

  private cache(id: string): ServerCache {
    let cache = this.caches.get(id);
    if (cache === undefined) {
      cache = {
        pager: new ResourcePager(async (cursor) => {
          const page = await this.ctx.request(
            protocol.listResources,
            cursor === undefined ? { server: id } : { server: id, cursor },
          );
          for (const warning of page.warnings) {
            this.ctx.log.warn(`[${id}] ${warning}`);
          }
          return page;
        }),
        templates: new LazyValue(
          async () => (await this.ctx.request(protocol.listResourceTemplates, { server: id })).items,
        ),
      };
      this.caches.set(id, cache);
    }
    return cache;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function toNode(server: string, row: ServerRow): Node {
  switch (row.kind) {
    case "templates":
      return { kind: "templates", server, items: row.items };
    case "resource":
      return { kind: "resource", item: row.item };
    case "loadMore":
      return { kind: "loadMore", server, loading: row.loading };
    case "warning":
      return { kind: "message", text: row.text, icon: "warning" };
    case "error":
      return { kind: "message", text: row.text, icon: "error" };
    case "empty":
      return { kind: "message", text: row.text, icon: "info" };
  }
}

function messageColor(icon: "error" | "warning" | "info"): vscode.ThemeColor | undefined {
  switch (icon) {
    case "error":
      return new vscode.ThemeColor("list.errorForeground");
    case "warning":
      return new vscode.ThemeColor("list.warningForeground");
    case "info":
      return undefined;
  }
}

function present(parts: readonly (string | undefined)[]): string[] {
  return parts.filter((part): part is string => part !== undefined && part !== "");
}

function lines(...parts: (string | undefined)[]): string {
  return present(parts).join("\n");
}

// Without it a screen reader names a tree item by its tooltip, which starts with the URI, not the name.
function spoken(...parts: (string | undefined)[]): vscode.AccessibilityInformation {
  return { label: present(parts).join(", ") };
}

/** The Explorer view "MCP Resources" for the extension's lifetime, following the sidecar and its servers. */
export class ResourcesView {
  private readonly tree: ResourceTree;
  private readonly view: vscode.TreeView<Node>;
  /** Per server, what its loaded pages were listed under; a change of it makes them stale. */
  private readonly listings = new Map<string, ListingKey>();

  constructor(
    private readonly ctx: Ctx,
    private readonly trust: WorkspaceTrustWait,
  ) {
    this.tree = new ResourceTree(ctx);
    this.view = vscode.window.createTreeView("hostBridge.resources", {
      treeDataProvider: this.tree,
      showCollapseAll: true,
    });
    ctx.pushExtCleanup(
      this.tree,
      this.view,
      ctx.onResourcesChanged(({ server }) => this.tree.refreshServer(server)),
      ctx.onServerChanged((server) => {
        const before = this.listings.get(server.id);
        this.listings.set(server.id, listingKey(server));
        if (pagesStale(before, server)) {
          // Started, stopped or reconnected: its cursors and list are stale; other servers keep their pages.
          this.tree.refreshServer(server.id);
        } else {
          this.tree.redrawServer(server.id);
        }
        this.updateMessage();
      }),
      ctx.onStateChanged(() => {
        this.updateMessage();
        this.tree.redraw();
      }),
      ctx.onStarted(() => {
        // Cursors are only valid within one sidecar process.
        this.rememberListings();
        this.updateMessage();
        this.tree.refreshAll();
      }),
      trust.onDidChange(() => this.updateMessage()),
    );
    this.updateMessage();
  }

  /** "Refresh" in the view's title: the servers' status again, and every list from its first page. */
  async refresh(): Promise<void> {
    if (this.ctx.sidecarState.kind === "running") {
      try {
        await this.ctx.status();
      } catch (error) {
        this.ctx.showError("Could not refresh the MCP servers' status", error);
      }
    }
    this.rememberListings();
    this.updateMessage();
    this.tree.refreshAll();
  }

  /** "Load more…" under a server (`server` is its id): append the next page of its resources. */
  async loadMore(server: unknown): Promise<void> {
    if (typeof server === "string") {
      await this.tree.loadMore(server);
    }
  }

  private updateMessage(): void {
    this.view.message = treeMessage(this.ctx.sidecarState, this.ctx.servers.size, this.trust.waiting);
  }

  private rememberListings(): void {
    this.listings.clear();
    for (const server of this.ctx.servers.values()) {
      this.listings.set(server.id, listingKey(server));
    }
  }
}
