import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type * as protocol from "../../../src/protocol";
import type { Row } from "../../../src/resources/resourceModel";
import { ResourceCatalog } from "../../../src/resources/resourceModel";
import {
  FILTER_PLACEHOLDER,
  FIRST_PAGE,
  MAX_SHOWN,
  ListingCache,
  NOTICE_DETAIL,
  PAGE_LIMIT,
  type RowItem,
  RowItems,
  RENDER_INTERVAL_MS,
  Throttle,
  comingUp,
  filterRows,
  itemToHighlight,
  listAllPages,
  moreText,
  type CachedListing,
  pickerPlaceholder,
  renderInterval,
  sameEntry,
  sameListing,
  serverNotice,
  shares,
  sidecarNotice,
  windowRows,
} from "../../../src/picker/resourcePickerModel";

/** `vscode.QuickPickItemKind.Separator`. */
const SEPARATOR = -1;

function resource(server: string, name: string, extra: Partial<protocol.ResourceItem> = {}): protocol.ResourceItem {
  return { server, uri: `x://${server}/${name}`, name, ...extra };
}

function template(server: string, name: string): protocol.TemplateItem {
  return { server, uriTemplate: `x://${server}/{${name}}`, name, variables: [name] };
}

const readme: Row = { kind: "resource", item: resource("fs", "README.md", { mimeType: "text/markdown" }) };
const notes: Row = { kind: "resource", item: resource("fs", "notes.txt") };
const file: Row = { kind: "template", item: template("fs", "file") };
const warning: Row = { kind: "warning", text: "srv failed" };
const separator: Row = { kind: "separator", server: "fs", label: "Files" };
const starting: Row = { kind: "notice", server: "late", severity: "info", text: "“late” is starting" };

function status(overrides: Partial<protocol.ServerStatus> & { id: string }): protocol.ServerStatus {
  return {
    label: overrides.id,
    source: "settings",
    transport: "stdio",
    identity: `settings|${overrides.id}|f`,
    workspaceDefined: false,
    env: [],
    envReferences: [],
    headerNames: [],
    passesSharedFolders: false,
    state: "running",
    resources: { subscribe: false, listChanged: true },
    sharedRoots: [],
    visibleThrough: [],
    reach: [],
    ...overrides,
  };
}

describe("RowItems", () => {
  it("makes one item per row and hands it out again, so a replaced list keeps its items", () => {
    const items = new RowItems(SEPARATOR);
    expect(items.itemFor(readme)).toBe(items.itemFor({ ...readme }));
    expect(items.itemFor(warning)).toBe(items.itemFor({ kind: "warning", text: "srv failed" }));
    expect(items.itemFor(separator)).toBe(items.itemFor({ ...separator }));
  });

  it("shows a resource's texts, and a template's marked with its icon", () => {
    const items = new RowItems(SEPARATOR);
    expect(items.itemFor(readme)).toEqual({
      row: readme,
      label: "README.md",
      description: "text/markdown",
      detail: "x://fs/README.md",
    });
    expect(items.itemFor(file)).toEqual({
      row: file,
      label: "$(symbol-variable) file",
      description: "template",
      detail: "x://fs/{file}",
    });
  });

  it("names the server in the description while the user filters, in items of their own", () => {
    const items = new RowItems(SEPARATOR);
    const plain = items.itemFor(readme);
    const named = items.itemFor(readme, (server) => `“${server}”`);
    expect(named).not.toBe(plain);
    expect(named.description).toBe("“fs” · text/markdown");
    expect(items.itemFor(readme, () => "other")).toBe(named);
    expect(items.itemFor(file, (server) => server).description).toBe("fs · template");
  });

  it("makes separators of the given kind and warnings that always show and lead to the log", () => {
    const items = new RowItems(SEPARATOR);
    expect(items.itemFor({ kind: "separator", server: "x", label: "$(alert) x" })).toEqual({
      row: { kind: "separator", server: "x", label: "$(alert) x" },
      label: "$\u200B(alert) x",
      kind: SEPARATOR,
    });
    expect(items.itemFor(warning)).toEqual({
      row: warning,
      label: "$(warning) srv failed",
      detail: "Select to show the log.",
      alwaysShow: true,
    });
  });
});

describe("notice rows", () => {
  it("show their icon, always, and lead to the servers' status", () => {
    const items = new RowItems(SEPARATOR);
    expect(items.itemFor(starting)).toEqual({
      row: starting,
      label: "$(info) “late” is starting",
      detail: NOTICE_DETAIL,
      alwaysShow: true,
    });
    expect(items.itemFor({ kind: "notice", severity: "warning", text: "$(x) failed" }).label).toBe(
      "$(warning) $\u200B(x) failed",
    );
    expect(items.itemFor(starting)).toBe(items.itemFor({ ...starting }));
  });

  it("are never highlighted, so Enter never takes one for a resource", () => {
    const items = new RowItems(SEPARATOR);
    const shown = [starting, separator, readme].map((row) => items.itemFor(row));
    expect(itemToHighlight(shown, items.itemFor(starting), "")).toBe(items.itemFor(readme));
    expect(itemToHighlight([items.itemFor(starting)], undefined, "")).toBeUndefined();
  });
});

describe("serverNotice", () => {
  it("says a server is starting or restarting, as information", () => {
    expect(serverNotice(status({ id: "late", state: "starting" }), false)).toEqual({
      severity: "info",
      text: "“late” is starting: its resources are listed once it runs",
    });
    expect(serverNotice(status({ id: "late", state: "restarting" }), false)?.text).toBe(
      "“late” is restarting: its resources are listed once it runs again",
    );
  });

  it("warns that a server waits for trust, or failed with its reason", () => {
    expect(serverNotice(status({ id: "workspace", state: "awaitingTrust" }), false)).toEqual({
      severity: "warning",
      text: "“workspace” waits for your trust: it is not started, so it offers no resources until you trust it",
    });
    const failed = status({ id: "broken", state: "failed", lastError: "exited with code 3\nbefore the handshake" });
    expect(serverNotice(failed, false)).toEqual({
      severity: "warning",
      text: "“broken” failed, so it offers no resources: exited with code 3 before the handshake",
    });
    expect(serverNotice(status({ id: "off", state: "stopped" }), false)?.text).toBe(
      "“off” is stopped, so it offers no resources",
    );
  });

  it("says a running server declares no resources, or, once listed, lists none", () => {
    expect(serverNotice(status({ id: "tools", resources: undefined }), false)).toEqual({
      severity: "info",
      text: "“tools” offers no resources: it does not declare the resources capability",
    });
    expect(serverNotice(status({ id: "files" }), false)).toBeUndefined();
    expect(serverNotice(status({ id: "files" }), true)).toEqual({
      severity: "info",
      text: "“files” lists no resources.",
    });
  });

  it("names the server by its label with invisible characters shown", () => {
    expect(serverNotice(status({ id: "x", label: "Evil\u202eName", state: "starting" }), false)?.text).toMatch(
      /^“Evil\\u202eName” is starting/,
    );
  });
});

describe("comingUp", () => {
  it("holds for a server that is starting or restarting only", () => {
    expect(comingUp({ state: "starting" })).toBe(true);
    expect(comingUp({ state: "restarting" })).toBe(true);
    expect(comingUp({ state: "awaitingTrust" })).toBe(false);
    expect(comingUp({ state: "running" })).toBe(false);
  });
});

describe("sidecarNotice", () => {
  it("names MCP Host Bridge while it starts, stopped or failed, and says nothing while it runs", () => {
    expect(sidecarNotice({ kind: "running" })).toBeUndefined();
    expect(sidecarNotice({ kind: "starting" })).toEqual({
      severity: "info",
      text: "MCP Host Bridge is starting; the servers' resources appear here as they come up.",
    });
    expect(sidecarNotice({ kind: "failed", reason: "Python 3.9\nis too old." })?.text).toBe(
      "MCP Host Bridge failed: Python 3.9 is too old.",
    );
    expect(sidecarNotice({ kind: "stopped" })).toEqual({ severity: "warning", text: "MCP Host Bridge is stopped" });
  });
});

describe("renderInterval", () => {
  it("replaces a short list every 100 ms, a longer one less often, and one shown in part every 200 ms", () => {
    expect(renderInterval(0)).toBe(100);
    expect(renderInterval(500)).toBe(100);
    expect(renderInterval(750)).toBe(150);
    expect(renderInterval(MAX_SHOWN)).toBe(200);
    expect(renderInterval(10_000)).toBe(200);
  });
});

describe("ListingCache", () => {
  function kept(names: string[]): CachedListing {
    const catalog = new ResourceCatalog(["fs"]);
    const items = names.map((name) => resource("fs", name));
    catalog.addResources(items);
    return { group: catalog.sortedGroup("fs") ?? { resources: [], templates: [] }, resources: items, templates: [] };
  }

  it("hands back a server's last listing while it runs on the same connection", () => {
    const cache = new ListingCache();
    const listing = kept(["a", "b"]);
    cache.set(status({ id: "fs", sharedRoots: [{ uri: "file:///x" }, { uri: "file:///y" }] }), listing);
    expect(cache.get(status({ id: "fs", sharedRoots: [{ uri: "file:///y" }, { uri: "file:///x", name: "x" }] }))).toBe(
      listing,
    );
    expect(cache.get(status({ id: "other" }))).toBeUndefined();
  });

  it("never hands back a listing made while other folders were shared with its server", () => {
    const cache = new ListingCache();
    const shared = status({ id: "fs", sharedRoots: [{ uri: "file:///x" }] });
    cache.set(shared, kept(["secret"]));
    expect(cache.get(status({ id: "fs", sharedRoots: [] }))).toBeUndefined();
    expect(cache.get(status({ id: "fs", sharedRoots: [{ uri: "file:///x/sub" }] }))).toBeUndefined();

    expect(cache.serverChanged(status({ id: "fs", sharedRoots: [] }))).toBe(true);
    expect(cache.get(shared)).toBeUndefined();
    expect(cache.serverChanged(shared)).toBe(false);
  });

  it("drops a listing once its server stopped running, restarted with other capabilities, or said its list changed", () => {
    const cache = new ListingCache();
    cache.set(status({ id: "fs" }), kept(["a"]));
    cache.serverChanged(status({ id: "fs", state: "restarting" }));
    expect(cache.get(status({ id: "fs" }))).toBeUndefined();

    cache.set(status({ id: "fs" }), kept(["a"]));
    expect(cache.get(status({ id: "fs", resources: { subscribe: true, listChanged: true } }))).toBeUndefined();
    cache.serverChanged(status({ id: "fs" }));
    expect(cache.get(status({ id: "fs" }))).toBeDefined();
    cache.forget("fs");
    expect(cache.get(status({ id: "fs" }))).toBeUndefined();

    cache.set(status({ id: "fs" }), kept(["a"]));
    cache.clear();
    expect(cache.get(status({ id: "fs" }))).toBeUndefined();
  });

  it("gives a catalog a kept listing's rows, sorted, without sorting again", () => {
    const catalog = new ResourceCatalog(["fs"]);
    catalog.setSortedGroup("fs", kept(["b", "a"]).group);
    expect(catalog.rows().map((row) => (row.kind === "resource" ? row.item.name : row.kind))).toEqual([
      "separator",
      "a",
      "b",
    ]);
  });

  it("tells a fresh listing that brings nothing new, field by field", () => {
    const [a, b] = [resource("fs", "a", { annotations: { priority: 1 } }), resource("fs", "b")];
    const kept = { resources: [a, b], templates: [] };
    const copy = (item: protocol.ResourceItem): protocol.ResourceItem =>
      JSON.parse(JSON.stringify(item)) as protocol.ResourceItem;
    expect(sameListing(kept, { resources: [copy(a), copy(b)], templates: [] })).toBe(true);
    expect(sameListing(kept, { resources: [a], templates: [] })).toBe(false);
    expect(sameListing(kept, { resources: [a, b], templates: [template("fs", "t")] })).toBe(false);
    expect(sameListing(kept, { resources: [{ ...a, annotations: { priority: 0.5 } }, b], templates: [] })).toBe(false);
    expect(sameListing(kept, { resources: [a, { ...b, title: "B" }], templates: [] })).toBe(false);
  });
});

describe("sameEntry", () => {
  it("matches the same resource, template, warning or server across a re-listing", () => {
    expect(sameEntry(readme, { kind: "resource", item: resource("fs", "README.md", { size: 3 }) })).toBe(true);
    expect(sameEntry(readme, notes)).toBe(false);
    expect(sameEntry(readme, { kind: "resource", item: resource("other", "README.md") })).toBe(false);
    expect(sameEntry(file, { kind: "template", item: template("fs", "file") })).toBe(true);
    expect(sameEntry(file, { kind: "template", item: template("fs", "dir") })).toBe(false);
    expect(sameEntry(warning, { kind: "warning", text: "srv failed" })).toBe(true);
    expect(sameEntry(separator, { kind: "separator", server: "fs", label: "renamed" })).toBe(true);
    expect(sameEntry(separator, readme)).toBe(false);
    expect(sameEntry(starting, { ...starting })).toBe(true);
    expect(sameEntry(starting, { ...starting, server: "other" })).toBe(false);
  });
});

describe("itemToHighlight", () => {
  const items = new RowItems(SEPARATOR);
  const shown = [warning, separator, readme, notes, file].map((row) => items.itemFor(row));
  const at = (row: Row): RowItem => items.itemFor(row);

  it("keeps the entry the user moved to, also as the variant that names its server", () => {
    expect(itemToHighlight(shown, at(notes), "")).toBe(at(notes));
    const named = [warning, separator, readme, notes].map((row) => items.itemFor(row, (server) => server));
    expect(itemToHighlight(named, at(notes), "no")).toBe(named[3]);
  });

  it("starts on the first resource or template, never on a warning, while nothing is typed", () => {
    expect(itemToHighlight(shown, undefined, "")).toBe(at(readme));
    expect(itemToHighlight(shown, at(warning), "")).toBe(at(readme));
    expect(itemToHighlight([at(warning), at(separator), at(file)], undefined, "")).toBe(at(file));
  });

  it("leaves the highlight to the quick pick when the entry is gone while filtering", () => {
    expect(itemToHighlight(shown, items.itemFor({ kind: "resource", item: resource("fs", "gone") }), "x")).toBe(
      undefined,
    );
    expect(itemToHighlight(shown, at(warning), "x")).toBeUndefined();
    expect(itemToHighlight([at(warning)], undefined, "")).toBeUndefined();
  });
});

describe("pickerPlaceholder", () => {
  it("invites filtering while listing or when there is something to show", () => {
    expect(pickerPlaceholder(true, 0, 0)).toBe(FILTER_PLACEHOLDER);
    expect(pickerPlaceholder(false, 3, 1)).toBe(FILTER_PLACEHOLDER);
  });

  it("points at the notices when they say why nothing shows", () => {
    expect(pickerPlaceholder(false, 0, 1, 2)).toBe("No resources to show yet; the rows below say why.");
    expect(pickerPlaceholder(true, 0, 0, 2)).toBe(FILTER_PLACEHOLDER);
  });

  it("says why the list is empty once listing is done", () => {
    expect(pickerPlaceholder(false, 0, 2)).toBe("No resources could be listed; see the warnings above.");
    expect(pickerPlaceholder(false, 0, 0)).toBe(
      'No MCP server offers resources right now. Run "MCP: Show Server Status" to see why.',
    );
  });
});

function page(items: string[], nextCursor?: string): protocol.ResourcePage {
  return {
    items: items.map((name) => resource("fs", name)),
    warnings: [],
    ...(nextCursor !== undefined ? { nextCursor } : {}),
  };
}

describe("listAllPages", () => {
  it("follows the cursors to the last page, a short one first, handing out each page as it comes", async () => {
    const pages: Record<string, protocol.ResourcePage> = {
      "": page(["a"], "c1"),
      c1: page(["b"], "c2"),
      c2: page(["c"]),
    };
    const asked: protocol.ListResourcesParams[] = [];
    const got: string[][] = [];
    const end = await listAllPages(
      async (params) => {
        asked.push(params);
        return pages[params.cursor ?? ""] ?? page([]);
      },
      { server: "fs" },
      (received) => got.push(received.items.map((item) => item.name)),
      () => false,
    );
    expect(end).toBe("done");
    expect(asked).toEqual([
      { server: "fs", limit: FIRST_PAGE },
      { server: "fs", cursor: "c1", limit: PAGE_LIMIT },
      { server: "fs", cursor: "c2", limit: PAGE_LIMIT },
    ]);
    expect(got).toEqual([["a"], ["b"], ["c"]]);
  });

  it("stops on a cursor it was handed before, after handing out that page", async () => {
    const got: string[] = [];
    const end = await listAllPages(
      async (params) => (params.cursor === undefined ? page(["a"], "loop") : page(["b"], "loop")),
      {},
      (received) => got.push(...received.items.map((item) => item.name)),
      () => false,
    );
    expect(end).toBe("repeated");
    expect(got).toEqual(["a", "b"]);
  });

  it("drops the page that arrives after a cancellation and asks for no more", async () => {
    let cancelled = false;
    let fetches = 0;
    const got: protocol.ResourcePage[] = [];
    const end = await listAllPages(
      async () => {
        fetches += 1;
        cancelled = true;
        return page(["a"], "next");
      },
      {},
      (received) => got.push(received),
      () => cancelled,
    );
    expect(end).toBe("cancelled");
    expect(fetches).toBe(1);
    expect(got).toEqual([]);
  });
});

describe("Throttle", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs a burst of scheduled runs once, an interval after the last run", () => {
    const run = vi.fn();
    const throttle = new Throttle(run, 200);
    throttle.now();
    expect(run).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(50);
    throttle.schedule();
    throttle.schedule();
    vi.advanceTimersByTime(149);
    expect(run).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it("runs a scheduled run at once when the last run is an interval ago", () => {
    const run = vi.fn();
    const throttle = new Throttle(run, 200);
    vi.advanceTimersByTime(500);
    throttle.schedule();
    vi.advanceTimersByTime(0);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it("asks an interval function at each scheduling, so the interval can grow with the list", () => {
    const run = vi.fn();
    let interval = 200;
    const throttle = new Throttle(run, () => interval);
    throttle.now();
    interval = 1000;
    throttle.schedule();
    vi.advanceTimersByTime(999);
    expect(run).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it("drops a scheduled run when it runs now or is cancelled", () => {
    const run = vi.fn();
    const throttle = new Throttle(run, 200);
    throttle.now();
    throttle.schedule();
    throttle.now();
    vi.advanceTimersByTime(1000);
    expect(run).toHaveBeenCalledTimes(2);
    throttle.schedule();
    throttle.cancel();
    vi.advanceTimersByTime(1000);
    expect(run).toHaveBeenCalledTimes(2);
  });
});

describe("shares", () => {
  it("gives each an even share of the limit and what one cannot use to the others", () => {
    expect(shares([10, 10], 10)).toEqual([5, 5]);
    expect(shares([2, 100, 0], 10)).toEqual([2, 8, 0]);
    expect(shares([3, 3], 10)).toEqual([3, 3]);
    expect(shares([5, 5, 5], 4)).toEqual([2, 1, 1]);
    expect(shares([], 10)).toEqual([]);
  });
});

/** A catalog of `servers` (id → how many resources, and templates) and its rows. */
function bigCatalog(servers: Record<string, [number, number]>): ResourceCatalog {
  const catalog = new ResourceCatalog(Object.keys(servers));
  for (const [server, [resources, templates]] of Object.entries(servers)) {
    catalog.addResources(
      Array.from({ length: resources }, (_, index) => resource(server, `r${String(index).padStart(5, "0")}`)),
    );
    catalog.addTemplates(Array.from({ length: templates }, (_, index) => template(server, `t${index}`)));
  }
  return catalog;
}

function names(rows: readonly Row[]): string[] {
  return rows.map((row) => {
    switch (row.kind) {
      case "resource":
      case "template":
        return `${row.item.server}:${row.item.name}`;
      case "separator":
        return `-- ${row.server}`;
      case "more":
        return `+${row.hidden}${row.server === undefined ? "" : ` ${row.server}`}`;
      default:
        return row.kind;
    }
  });
}

describe("windowRows", () => {
  it("shows at most the limit, shared between servers, each server's templates first, saying what is left out", () => {
    const catalog = bigCatalog({ big: [10, 2], small: [1, 0] });
    catalog.addWarnings(["careful"]);
    const shown = windowRows(catalog.rows(), 6, (server) => server.toUpperCase());
    expect(names(shown)).toEqual([
      "warning",
      "-- big",
      "big:r00000",
      "big:r00001",
      "big:r00002",
      "+7 big",
      "big:t0",
      "big:t1",
      "-- small",
      "small:r00000",
    ]);
    const more = shown.find((row) => row.kind === "more");
    expect(more).toEqual({ kind: "more", hidden: 7, server: "big", serverLabel: "BIG" });
  });

  it("keeps every row of a list within the limit, and a server's notice", () => {
    const catalog = bigCatalog({ a: [2, 1] });
    catalog.setNotice("b", { severity: "info", text: "b is starting" });
    expect(windowRows(catalog.rows(), 10)).toEqual(catalog.rows());
  });
});

describe("filterRows", () => {
  const items = new RowItems(SEPARATOR);
  const named = (server: string): string => `srv ${server}`;

  it("keeps what the filter matches, label matches first, warnings and notices always, separators never", () => {
    const catalog = bigCatalog({ a: [3, 0] });
    catalog.addResources([resource("a", "zeta", { description: "about r00002" })]);
    catalog.addWarnings(["careful"]);
    const rows = catalog.rows().map((row) => items.itemFor(row, named));
    const kept = filterRows(rows, "r00002", 10, (hidden) => items.itemFor({ kind: "more", hidden }));
    expect(names(kept.map((item) => item.row))).toEqual(["warning", "a:r00002", "a:zeta"]);
  });

  it("cuts the matches at the limit and says how many more match", () => {
    const rows = bigCatalog({ a: [30, 0] })
      .rows()
      .map((row) => items.itemFor(row, named));
    const kept = filterRows(rows, "r000", 5, (hidden) => items.itemFor({ kind: "more", hidden }));
    expect(names(kept.map((item) => item.row))).toEqual([
      "a:r00000",
      "a:r00001",
      "a:r00002",
      "a:r00003",
      "a:r00004",
      "+25",
    ]);
    const more = kept[kept.length - 1];
    expect(more?.label).toBe("$(search) 25 more matches are not shown: type more to narrow the list");
    expect(more?.alwaysShow).toBe(true);
  });

  it("finds the last of 10 000 resources by name and hands the window only its matches", () => {
    const rows = bigCatalog({ many: [10_000, 0] })
      .rows()
      .map((row) => items.itemFor(row, named));
    const kept = filterRows(rows, "r09999", MAX_SHOWN, (hidden) => items.itemFor({ kind: "more", hidden }));
    expect(names(kept.map((item) => item.row))).toEqual(["many:r09999"]);
  });
});

describe("moreText", () => {
  it("says how many rows of a server are left out, or how many matches", () => {
    expect(moreText({ kind: "more", hidden: 9000, server: "m", serverLabel: "many" })).toBe(
      "9,000 more of “many” are not shown: type to find them",
    );
    expect(moreText({ kind: "more", hidden: 1 })).toBe("1 more match is not shown: type more to narrow the list");
  });
});

describe("redrawing while a long listing arrives", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("replaces the list a bounded number of times, with at most MAX_SHOWN items each: linear in all", () => {
    // As the picker does: the first page is drawn at once, later ones at most every renderInterval, the last at once.
    const catalog = new ResourceCatalog(["many"]);
    const itemsHanded: number[] = [];
    const renders = new Throttle(
      () => itemsHanded.push(windowRows(catalog.rows(), MAX_SHOWN).length),
      () => renderInterval(catalog.size),
    );
    for (let page = 0; page < 100; page += 1) {
      catalog.addResources(
        Array.from({ length: 100 }, (_, index) => resource("many", `r${String(page * 100 + index).padStart(5, "0")}`)),
      );
      if (page === 0) {
        renders.now();
      } else {
        renders.schedule();
      }
      vi.advanceTimersByTime(20); // a page every 20 ms: 2 s for 10 000 resources
    }
    renders.now();
    expect(itemsHanded.length).toBeLessThanOrEqual(2 + Math.ceil(2000 / RENDER_INTERVAL_MS));
    expect(Math.max(...itemsHanded)).toBeLessThanOrEqual(MAX_SHOWN + 2);
    expect(itemsHanded[itemsHanded.length - 1]).toBe(MAX_SHOWN + 2); // separator, rows, "more"
  });
});
