import { describe, expect, it } from "vitest";
import type { ResourceItem, ResourcePage, ServerStatus, TemplateItem } from "../../../src/protocol";
import {
  LazyValue,
  type Loaded,
  ResourcePager,
  listingKey,
  pagesStale,
  serverNodeView,
  serverRows,
  treeMessage,
} from "../../../src/tree/treeModel";

function resource(name: string): ResourceItem {
  return { server: "fs", uri: `demo://${name}`, name };
}

function page(names: string[], nextCursor?: string, warnings: string[] = []): ResourcePage {
  return { items: names.map(resource), nextCursor, warnings };
}

/** A fetcher whose answers the test releases one by one, recording the cursors it was asked for. */
function deferredFetcher() {
  const cursors: (string | undefined)[] = [];
  const waiting: { resolve: (page: ResourcePage) => void; reject: (error: Error) => void }[] = [];
  const fetch = (cursor: string | undefined) => {
    cursors.push(cursor);
    return new Promise<ResourcePage>((resolve, reject) => waiting.push({ resolve, reject }));
  };
  const next = () => {
    const entry = waiting.shift();
    if (entry === undefined) {
      throw new Error("no request is waiting");
    }
    return entry;
  };
  return { fetch, cursors, next };
}

function names(pager: ResourcePager): string[] {
  return pager.items.map((item) => item.name);
}

const noTemplates: Loaded<readonly TemplateItem[]> = { ok: true, value: [] };

describe("ResourcePager", () => {
  it("appends pages in order, asking with the previous page's cursor", async () => {
    const pages = [page(["a", "b"], "c1"), page(["c"], "c2"), page(["d"])];
    const cursors: (string | undefined)[] = [];
    const pager = new ResourcePager(async (cursor) => {
      cursors.push(cursor);
      const next = pages.shift();
      if (next === undefined) {
        throw new Error("asked for too many pages");
      }
      return next;
    });
    await pager.load();
    expect(names(pager)).toEqual(["a", "b"]);
    expect(pager.hasMore).toBe(true);
    await pager.loadMore();
    await pager.loadMore();
    expect(names(pager)).toEqual(["a", "b", "c", "d"]);
    expect(pager.hasMore).toBe(false);
    expect(cursors).toEqual([undefined, "c1", "c2"]);
  });

  it("loads the first page only once however often it is asked", async () => {
    const fetcher = deferredFetcher();
    const pager = new ResourcePager(fetcher.fetch);
    const first = pager.load();
    const second = pager.load();
    fetcher.next().resolve(page(["a"]));
    await Promise.all([first, second]);
    await pager.load();
    expect(fetcher.cursors).toEqual([undefined]);
    expect(pager.loaded).toBe(true);
  });

  it("does not ask for the same next page twice while it loads", async () => {
    const fetcher = deferredFetcher();
    const pager = new ResourcePager(fetcher.fetch);
    const first = pager.load();
    fetcher.next().resolve(page(["a"], "c1"));
    await first;
    const more = pager.loadMore();
    expect(pager.loading).toBe(true);
    const again = pager.loadMore();
    fetcher.next().resolve(page(["b"]));
    await Promise.all([more, again]);
    expect(fetcher.cursors).toEqual([undefined, "c1"]);
    expect(names(pager)).toEqual(["a", "b"]);
  });

  it("does not make a reload of the first page wait for the next page", async () => {
    const fetcher = deferredFetcher();
    const pager = new ResourcePager(fetcher.fetch);
    const first = pager.load();
    fetcher.next().resolve(page(["a"], "c1"));
    await first;
    void pager.loadMore();
    let settled = false;
    await pager.load().then(() => (settled = true));
    expect(settled).toBe(true);
    expect(pager.loading).toBe(true);
    expect(serverRows(pager, noTemplates).at(-1)).toEqual({ kind: "loadMore", loading: true });
    fetcher.next().resolve(page(["b"]));
  });

  it("drops its pages on reset and ignores an answer that arrives afterwards", async () => {
    const fetcher = deferredFetcher();
    const pager = new ResourcePager(fetcher.fetch);
    const stale = pager.load();
    pager.reset();
    const fresh = pager.load();
    fetcher.next().resolve(page(["old"], "old-cursor"));
    fetcher.next().resolve(page(["new"]));
    await Promise.all([stale, fresh]);
    expect(names(pager)).toEqual(["new"]);
    expect(pager.hasMore).toBe(false);
  });

  it("starts over from the first page after a reset", async () => {
    const fetcher = deferredFetcher();
    const pager = new ResourcePager(fetcher.fetch);
    const first = pager.load();
    fetcher.next().resolve(page(["a"], "c1"));
    await first;
    pager.reset();
    expect(pager.items).toEqual([]);
    expect(pager.loaded).toBe(false);
    const again = pager.load();
    fetcher.next().resolve(page(["b"]));
    await again;
    expect(fetcher.cursors).toEqual([undefined, undefined]);
    expect(names(pager)).toEqual(["b"]);
  });

  it("keeps its items and the cursor when a next page fails, so it can be retried", async () => {
    const fetcher = deferredFetcher();
    const pager = new ResourcePager(fetcher.fetch);
    const first = pager.load();
    fetcher.next().resolve(page(["a"], "c1"));
    await first;
    const failing = pager.loadMore();
    fetcher.next().reject(new Error("The server timed out; try again."));
    await failing;
    expect(pager.error).toBe("The server timed out; try again.");
    expect(names(pager)).toEqual(["a"]);
    expect(pager.hasMore).toBe(true);
    const retry = pager.loadMore();
    fetcher.next().resolve(page(["b"]));
    await retry;
    expect(fetcher.cursors).toEqual([undefined, "c1", "c1"]);
    expect(pager.error).toBeUndefined();
  });

  it("collects the warnings of every page", async () => {
    const pages = [page(["a"], "c1", ["first"]), page([], undefined, ["second"])];
    const pager = new ResourcePager(async () => pages.shift() ?? page([]));
    await pager.load();
    await pager.loadMore();
    expect(pager.warnings).toEqual(["first", "second"]);
  });
});

describe("LazyValue", () => {
  it("loads once and loads again after a reset", async () => {
    let calls = 0;
    const value = new LazyValue(async () => ++calls);
    expect(await value.get()).toEqual({ ok: true, value: 1 });
    expect(await value.get()).toEqual({ ok: true, value: 1 });
    value.reset();
    expect(await value.get()).toEqual({ ok: true, value: 2 });
  });

  it("keeps a failure as a message instead of throwing", async () => {
    const value = new LazyValue(async () => {
      throw new Error("Server not running.");
    });
    expect(await value.get()).toEqual({ ok: false, error: "Server not running." });
  });
});

describe("serverRows", () => {
  it("shows load more after the resources while there is a next page", async () => {
    const pager = new ResourcePager(async () => page(["a", "b"], "c1"));
    await pager.load();
    expect(serverRows(pager, noTemplates).map((row) => row.kind)).toEqual(["resource", "resource", "loadMore"]);
  });

  it("hides load more on the last page", async () => {
    const pager = new ResourcePager(async () => page(["a"]));
    await pager.load();
    expect(serverRows(pager, noTemplates).map((row) => row.kind)).toEqual(["resource"]);
  });

  it("puts the templates folder first and only when there are templates", async () => {
    const pager = new ResourcePager(async () => page(["a"]));
    await pager.load();
    const template: TemplateItem = { server: "fs", uriTemplate: "demo://{id}", name: "by id", variables: ["id"] };
    expect(serverRows(pager, { ok: true, value: [template] })[0]).toEqual({ kind: "templates", items: [template] });
  });

  it("makes a failed first page a single error row", async () => {
    const pager = new ResourcePager(async () => {
      throw new Error("MCP server 'fs' is not running; restart it.");
    });
    await pager.load();
    expect(serverRows(pager, noTemplates)).toEqual([
      { kind: "error", text: "MCP server 'fs' is not running; restart it." },
    ]);
  });

  it("says so when a server lists nothing", async () => {
    const pager = new ResourcePager(async () => page([]));
    await pager.load();
    expect(serverRows(pager, noTemplates)).toEqual([{ kind: "empty", text: "This server lists no resources." }]);
  });

  it("reports a template listing failure without hiding the resources", async () => {
    const pager = new ResourcePager(async () => page(["a"]));
    await pager.load();
    const kinds = serverRows(pager, { ok: false, error: "timed out" }).map((row) => row.kind);
    expect(kinds).toEqual(["error", "resource"]);
  });
});

function status(overrides: Partial<ServerStatus>): ServerStatus {
  return {
    id: "fs",
    label: "Files",
    source: "settings",
    transport: "stdio",
    identity: "settings|fs|f",
    workspaceDefined: false,
    env: [],
    envReferences: [],
    headerNames: [],
    passesSharedFolders: false,
    state: "running",
    sharedRoots: [],
    visibleThrough: [],
    reach: [],
    ...overrides,
  };
}

describe("serverNodeView", () => {
  it("makes a running server with resources expandable", () => {
    const view = serverNodeView(status({ resources: { subscribe: true, listChanged: true } }));
    expect(view).toMatchObject({ description: "running", expandable: true });
    expect(view.notRunningMessage).toBeUndefined();
  });

  it("says a running server without the resources capability has no resources", () => {
    const view = serverNodeView(status({}));
    expect(view).toMatchObject({ description: "running · no resources", expandable: false });
  });

  it("explains why a failed server shows no resources", () => {
    const view = serverNodeView(status({ state: "failed", lastError: "npx was not found; install Node.js." }));
    expect(view.notRunningMessage).toBe("Server not running: npx was not found; install Node.js.");
    expect(view.icon.id).toBe("error");
  });

  it("spins while a server starts", () => {
    expect(serverNodeView(status({ state: "starting" })).icon.id).toBe("loading~spin");
  });

  it("says in its tooltip that folders were only offered to a server that never asked for them", () => {
    const view = serverNodeView(status({ sharedRoots: [{ uri: "file:///home/me/webapp", name: "webapp" }] }));
    expect(view.tooltip.split("\n")).toContain("offered webapp — has not asked for its folders");
    expect(view.tooltip).not.toContain("shares");
  });

  it("gives the sandbox's summary in its tooltip, or says it is not sandboxed", () => {
    const summary = "Linux Landlock (ABI 6) confines this server: it can write only /w and a private temp folder.";
    const open = { network: "on" as const, unixSockets: false, readOnly: [], channels: [] };
    const boxed = serverNodeView(
      status({
        sandbox: {
          setting: "enforce",
          enforced: true,
          planned: false,
          mechanism: "landlock",
          summary,
          warnings: [],
          ...open,
        },
      }),
    );
    expect(boxed.tooltip.split("\n")).toContain(`Sandbox: ${summary}`);
    const loose = serverNodeView(
      status({
        sandbox: {
          setting: "off",
          enforced: false,
          planned: false,
          mechanism: "none",
          summary: "The sandbox is off.",
          warnings: [],
          ...open,
        },
      }),
    );
    expect(loose.tooltip.split("\n")).toContain("not sandboxed: The sandbox is off.");
  });
});

describe("pagesStale", () => {
  const caps = { subscribe: true, listChanged: true };

  it("keeps a running server's pages when only its folders or last error change", () => {
    const before = listingKey(status({ resources: caps }));
    expect(pagesStale(before, status({ resources: caps, sharedRoots: [{ uri: "file:///a" }] }))).toBe(false);
    expect(pagesStale(before, status({ resources: { ...caps }, lastError: "a warning" }))).toBe(false);
  });

  it("drops the pages when the server starts or stops running", () => {
    const running = listingKey(status({ resources: caps }));
    expect(pagesStale(running, status({ state: "restarting", resources: caps }))).toBe(true);
    const restarting = listingKey(status({ state: "restarting", resources: caps }));
    expect(pagesStale(restarting, status({ resources: caps }))).toBe(true);
  });

  it("keeps the pages across changes between states that are not running", () => {
    const starting = listingKey(status({ state: "starting" }));
    expect(pagesStale(starting, status({ state: "failed" }))).toBe(false);
  });

  it("drops the pages when the resources capability changes, and for a server not seen before", () => {
    const before = listingKey(status({ resources: caps }));
    expect(pagesStale(before, status({ resources: { subscribe: false, listChanged: true } }))).toBe(true);
    expect(pagesStale(undefined, status({ resources: caps }))).toBe(true);
  });
});

describe("server node label", () => {
  it("shows the id when the label is empty", () => {
    expect(serverNodeView(status({ label: "" })).label).toBe(status({}).id);
  });
});

describe("treeMessage", () => {
  it("is empty while servers are shown", () => {
    expect(treeMessage({ kind: "running" }, 2)).toBeUndefined();
  });

  it("tells how to add servers when none is configured", () => {
    expect(treeMessage({ kind: "running" }, 0)).toContain("hostBridge.servers");
  });

  it("says which of the workspace's servers wait for workspace trust, with or without other servers", () => {
    const waiting = [{ path: "alpha/.vscode/mcp.json", names: ["workspace"] }];
    expect(treeMessage({ kind: "running" }, 0, waiting)).toBe(
      "Restricted Mode: “workspace” (alpha/.vscode/mcp.json) waits for workspace trust; trust the workspace to start it (each still asks for your trust first).",
    );
    expect(treeMessage({ kind: "running" }, 1, waiting)).toContain("“workspace” (alpha/.vscode/mcp.json) waits");
  });

  it("gives the sidecar's failure and what to do", () => {
    const message = treeMessage({ kind: "failed", reason: "Python was not found." }, 1);
    expect(message).toContain("Python was not found.");
    expect(message).toContain("MCP: Restart Host Bridge");
  });
});
