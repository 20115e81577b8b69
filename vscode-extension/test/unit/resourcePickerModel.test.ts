import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type * as protocol from "../../src/protocol";
import type { Row } from "../../src/resourceModel";
import { ResourceCatalog } from "../../src/resourceModel";
import {
  FILTER_PLACEHOLDER,
  ListingCache,
  NOTICE_DETAIL,
  type RowItem,
  RowItems,
  Throttle,
  comingUp,
  itemToHighlight,
  listAllPages,
  listingFingerprint,
  pickerPlaceholder,
  renderInterval,
  sameEntry,
  serverNotice,
  sidecarNotice,
} from "../../src/resourcePickerModel";

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
  it("replaces a short list every 200 ms and a long one less often, in proportion to its length", () => {
    expect(renderInterval(0)).toBe(200);
    expect(renderInterval(1000)).toBe(200);
    expect(renderInterval(5000)).toBe(1000);
    expect(renderInterval(10_000)).toBe(2000);
  });
});

describe("ListingCache", () => {
  function kept(names: string[]): {
    group: NonNullable<ReturnType<ResourceCatalog["sortedGroup"]>>;
    fingerprint: string;
  } {
    const catalog = new ResourceCatalog(["fs"]);
    const items = names.map((name) => resource("fs", name));
    catalog.addResources(items);
    return {
      group: catalog.sortedGroup("fs") ?? { resources: [], templates: [] },
      fingerprint: listingFingerprint(items, []),
    };
  }

  it("hands back a server's last listing while it runs on the same connection", () => {
    const cache = new ListingCache();
    const listing = kept(["a", "b"]);
    cache.set(status({ id: "fs" }), listing);
    expect(cache.get(status({ id: "fs", sharedRoots: [{ uri: "file:///x" }] }))).toBe(listing);
    expect(cache.get(status({ id: "other" }))).toBeUndefined();
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

  it("tells a fresh listing that brings nothing new by its fingerprint", () => {
    const items = [resource("fs", "a"), resource("fs", "b")];
    expect(listingFingerprint(items, [])).toBe(
      listingFingerprint(
        items.map((item) => ({ ...item })),
        [],
      ),
    );
    expect(listingFingerprint(items, [])).not.toBe(listingFingerprint([items[0]], []));
    expect(listingFingerprint(items, [])).not.toBe(listingFingerprint(items, [template("fs", "t")]));
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
  it("follows the cursors to the last page, handing out each page as it comes", async () => {
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
    expect(asked).toEqual([{ server: "fs" }, { server: "fs", cursor: "c1" }, { server: "fs", cursor: "c2" }]);
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
