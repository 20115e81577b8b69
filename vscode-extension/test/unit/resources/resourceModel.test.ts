import { describe, expect, it } from "vitest";
import type * as protocol from "../../../src/protocol";
import {
  ResourceCatalog,
  argumentChoices,
  asOpenTarget,
  binarySummary,
  compareResources,
  knownArguments,
  markdownLink,
  mergeSorted,
  nameKey,
  priorityOf,
  resourceText,
  templateResultName,
  templateText,
  withServer,
  type Row,
} from "../../../src/resources/resourceModel";

function resource(server: string, name: string, extra: Partial<protocol.ResourceItem> = {}): protocol.ResourceItem {
  return { server, uri: `x://${server}/${name}`, name, ...extra };
}

function template(server: string, name: string): protocol.TemplateItem {
  return { server, uriTemplate: `x://${server}/{${name}}`, name, variables: [name] };
}

function describeRows(rows: readonly Row[]): string[] {
  return rows.map((row) => {
    switch (row.kind) {
      case "separator":
        return `-- ${row.label}`;
      case "warning":
        return `! ${row.text}`;
      case "notice":
        return `${row.severity === "info" ? "i" : "!!"} ${row.text}`;
      case "resource":
        return row.item.name;
      case "template":
        return `T ${row.item.name}`;
      case "more":
        return `… ${row.hidden} more${row.server === undefined ? "" : ` of ${row.server}`}`;
    }
  });
}

describe("priorityOf", () => {
  it("reads annotations.priority and assumes the middle when it is missing or not a number", () => {
    expect(priorityOf(resource("s", "a", { annotations: { priority: 0.9 } }))).toBe(0.9);
    expect(priorityOf(resource("s", "a"))).toBe(0.5);
    expect(priorityOf(resource("s", "a", { annotations: { priority: "high" } }))).toBe(0.5);
  });
});

describe("compareResources", () => {
  it("puts higher priority first, then orders by title or name naturally and ignoring case", () => {
    const items = [
      resource("s", "file10"),
      resource("s", "File2"),
      resource("s", "low", { annotations: { priority: 0.1 } }),
      resource("s", "zed", { annotations: { priority: 1 } }),
      resource("s", "b", { title: "Alpha" }),
    ];
    expect(items.sort(compareResources).map((item) => item.name)).toEqual(["zed", "b", "File2", "file10", "low"]);
  });
});

describe("mergeSorted", () => {
  it("merges two sorted lists into one sorted list, left first on ties", () => {
    const byFirst = (a: [number, string], b: [number, string]) => a[0] - b[0];
    expect(
      mergeSorted<[number, string]>(
        [
          [1, "l"],
          [3, "l"],
        ],
        [
          [1, "r"],
          [2, "r"],
          [4, "r"],
        ],
        byFirst,
      ),
    ).toEqual([
      [1, "l"],
      [1, "r"],
      [2, "r"],
      [3, "l"],
      [4, "r"],
    ]);
  });

  it("places a page into a long list with a logarithmic number of comparisons", () => {
    const left = Array.from({ length: 50_000 }, (_, index) => index * 2);
    const right = Array.from({ length: 500 }, (_, index) => index * 200 + 1);
    let comparisons = 0;
    const merged = mergeSorted(left, right, (a, b) => {
      comparisons += 1;
      return a - b;
    });
    expect(merged).toHaveLength(50_500);
    expect(merged.slice(0, 4)).toEqual([0, 1, 2, 4]);
    expect(comparisons).toBeLessThan(500 * 20);
  });
});

describe("nameKey", () => {
  it("orders digit runs by value and ignores case and accents", () => {
    const names = ["file10", "File2", "élan", "Elan2", "file02", "zebra"];
    expect([...names].sort((a, b) => (nameKey(a) < nameKey(b) ? -1 : nameKey(a) > nameKey(b) ? 1 : 0))).toEqual([
      "élan",
      "Elan2",
      "File2",
      "file02",
      "file10",
      "zebra",
    ]);
  });
});

describe("ResourceCatalog", () => {
  it("groups by server in configuration order, each with its separator, resources then templates", () => {
    const catalog = new ResourceCatalog(["b", "a"], (id) => `Server ${id.toUpperCase()}`);
    catalog.addResources([resource("a", "a2"), resource("b", "b1"), resource("a", "a1")]);
    catalog.addTemplates([template("a", "t")]);
    expect(describeRows(catalog.rows())).toEqual(["-- Server B", "b1", "-- Server A", "a1", "a2", "T t"]);
  });

  it("keeps each server sorted as pages arrive out of order", () => {
    const catalog = new ResourceCatalog(["s"]);
    catalog.addResources([resource("s", "m"), resource("s", "c")]);
    catalog.addResources([resource("s", "a"), resource("s", "z"), resource("s", "d")]);
    expect(describeRows(catalog.rows())).toEqual(["-- s", "a", "c", "d", "m", "z"]);
    expect(catalog.size).toBe(5);
  });

  it("lists servers missing from the configuration order after the known ones, in first-seen order", () => {
    const catalog = new ResourceCatalog(["known"]);
    catalog.addResources([resource("new2", "x"), resource("known", "y"), resource("new1", "z")]);
    expect(describeRows(catalog.rows()).filter((row) => row.startsWith("--"))).toEqual([
      "-- known",
      "-- new2",
      "-- new1",
    ]);
  });

  it("shows warnings first and only once", () => {
    const catalog = new ResourceCatalog();
    catalog.addWarnings(["server x failed"]);
    catalog.addResources([resource("s", "a")]);
    catalog.addWarnings(["server x failed", "server y repeated a cursor"]);
    expect(describeRows(catalog.rows())).toEqual(["! server x failed", "! server y repeated a cursor", "-- s", "a"]);
  });

  it("replaces one server's resources and templates with its fresh listing, leaving the others", () => {
    const catalog = new ResourceCatalog(["a", "b"]);
    catalog.addResources([resource("a", "old1"), resource("a", "old2"), resource("b", "b1")]);
    catalog.addTemplates([template("a", "gone"), template("b", "kept")]);
    const before = catalog.rows();
    catalog.replaceServer("a", [resource("a", "new2"), resource("a", "new1"), resource("b", "ignored")], []);
    expect(catalog.rows()).not.toBe(before);
    expect(describeRows(catalog.rows())).toEqual(["-- a", "new1", "new2", "-- b", "b1", "T kept"]);
    expect(catalog.size).toBe(4);
  });

  it("drops a server's group when its fresh listing is empty", () => {
    const catalog = new ResourceCatalog(["a", "b"]);
    catalog.addResources([resource("a", "x"), resource("b", "y")]);
    catalog.replaceServer("a", [], []);
    expect(describeRows(catalog.rows())).toEqual(["-- b", "y"]);
  });

  it("explains a server that lists nothing under its name, in configuration order, until it lists something", () => {
    const catalog = new ResourceCatalog(["late", "files"]);
    catalog.addResources([resource("files", "a")]);
    catalog.setNotice("late", { severity: "info", text: "“late” is starting" });
    catalog.setNotice("files", { severity: "info", text: "never shown while it lists something" });
    expect(describeRows(catalog.rows())).toEqual(["-- late", "i “late” is starting", "-- files", "a"]);
    expect(catalog.noticeCount).toBe(1);

    catalog.replaceServer("late", [resource("late", "b")], []);
    expect(describeRows(catalog.rows())).toEqual(["-- late", "b", "-- files", "a"]);
    expect(catalog.noticeCount).toBe(0);
  });

  it("puts notices about the whole picker after the warnings, before every server", () => {
    const catalog = new ResourceCatalog(["s"]);
    catalog.addResources([resource("s", "a")]);
    catalog.addWarnings(["page repeated"]);
    catalog.setGeneralNotices([{ severity: "warning", text: "workspace servers wait for trust" }]);
    expect(describeRows(catalog.rows())).toEqual([
      "! page repeated",
      "!! workspace servers wait for trust",
      "-- s",
      "a",
    ]);
  });

  it("follows a changed server order and keeps its rows while notices stay the same", () => {
    const catalog = new ResourceCatalog(["a"]);
    catalog.setNotice("b", { severity: "warning", text: "b failed" });
    catalog.addResources([resource("a", "x")]);
    expect(describeRows(catalog.rows())).toEqual(["-- a", "x", "-- b", "!! b failed"]);
    const rows = catalog.rows();
    catalog.setNotice("b", { severity: "warning", text: "b failed" });
    catalog.setServerOrder(["a"]);
    catalog.setGeneralNotices([]);
    expect(catalog.rows()).toBe(rows);
    catalog.setServerOrder(["b", "a"]);
    expect(describeRows(catalog.rows())).toEqual(["-- b", "!! b failed", "-- a", "x"]);
    catalog.setNotice("b", undefined);
    expect(describeRows(catalog.rows())).toEqual(["-- a", "x"]);
  });

  it("forgets every resource, template and warning when cleared, keeping the notices", () => {
    const catalog = new ResourceCatalog(["s"]);
    catalog.addResources([resource("s", "a")]);
    catalog.addTemplates([template("s", "t")]);
    catalog.addWarnings(["w"]);
    catalog.setNotice("s", { severity: "info", text: "“s” is starting" });
    catalog.clear();
    expect(catalog.size).toBe(0);
    expect(describeRows(catalog.rows())).toEqual(["-- s", "i “s” is starting"]);
  });

  it("returns the same rows until something is added", () => {
    const catalog = new ResourceCatalog();
    catalog.addResources([resource("s", "a")]);
    const first = catalog.rows();
    expect(catalog.rows()).toBe(first);
    catalog.addResources([resource("s", "b")]);
    expect(catalog.rows()).not.toBe(first);
  });

  it("takes fifty thousand resources in pages of 500 and keeps each server's rows in order", () => {
    const catalog = new ResourceCatalog(["s0", "s1"]);
    for (let page = 0; page < 100; page += 1) {
      const items: protocol.ResourceItem[] = [];
      for (let index = 0; index < 500; index += 1) {
        const n = (page * 7919 + index * 104729) % 1_000_003;
        items.push(resource(`s${index % 2}`, `item-${n}`));
      }
      catalog.addResources(items);
      catalog.rows();
    }
    expect(catalog.size).toBe(50_000);
    const names = catalog
      .rows()
      .filter((row): row is Extract<Row, { kind: "resource" }> => row.kind === "resource" && row.item.server === "s0")
      .map((row) => row.item);
    let outOfOrder = 0;
    for (let index = 1; index < names.length; index += 1) {
      if (compareResources(names[index - 1], names[index]) > 0) {
        outOfOrder += 1;
      }
    }
    expect(names).toHaveLength(25_000);
    expect(outOfOrder).toBe(0);
  }, 120_000);
});

describe("row texts", () => {
  it("shows the name beside a title, then MIME type, size and description, with the URI as detail", () => {
    const text = resourceText(
      resource("s", "arch.md", {
        title: "Architecture",
        mimeType: "text/markdown",
        size: 1229,
        description: "How it fits",
      }),
    );
    expect(text).toEqual({
      label: "Architecture",
      description: "arch.md · text/markdown · 1.2 KB · How it fits",
      detail: "x://s/arch.md",
    });
  });

  it("shows only what a bare resource has", () => {
    expect(resourceText(resource("s", "a"))).toEqual({ label: "a", description: "", detail: "x://s/a" });
  });

  it("marks templates and shows their URI template", () => {
    expect(templateText(template("s", "id"))).toEqual({ label: "id", description: "template", detail: "x://s/{id}" });
  });
});

describe("row texts with icon syntax", () => {
  it("does not let a resource's title, description or URI render icons", () => {
    const text = resourceText({
      server: "s",
      uri: "x://$(key)",
      name: "n",
      title: "$(warning) Important",
      description: "$(check)",
    });
    expect(text.label).toBe("$\u200b(warning) Important");
    expect(`${text.description} ${text.detail}`).not.toContain("$(");
  });

  it("does not let a template's texts render icons", () => {
    const text = templateText({ server: "s", uriTemplate: "x://$(a){id}", name: "$(gear)", variables: ["id"] });
    expect(`${text.label} ${text.description} ${text.detail}`).not.toContain("$(");
  });
});

describe("markdownLink", () => {
  it("escapes brackets in the text and encodes characters that would end the target", () => {
    expect(markdownLink("a [b] c", "mcp-bridge://s/a (1).png?x")).toBe(
      "[a \\[b\\] c](mcp-bridge://s/a%20%281%29.png?x)",
    );
  });

  it("shows every Markdown character of the name literally", () => {
    expect(markdownLink("*bold* _x_ `code` <b>", "t")).toBe("[\\*bold\\* \\_x\\_ \\`code\\` \\<b\\>](t)");
    expect(markdownLink("a\nb", "t")).toBe("[a b](t)");
  });
});

describe("binarySummary", () => {
  it("names the resource, its type and its size", () => {
    expect(binarySummary("report.pdf", "application/pdf", 2048)).toBe("report.pdf: application/pdf, 2 KB");
    expect(binarySummary("blob", undefined, 10)).toBe("blob: unknown type, 10 B");
  });
});

describe("asOpenTarget", () => {
  it("takes a resource item, showing its title as the name", () => {
    expect(
      asOpenTarget({ server: "s", uri: "x://a", name: "a.md", title: "A", mimeType: "text/markdown", size: 3 }),
    ).toEqual({ server: "s", uri: "x://a", name: "A", mimeType: "text/markdown" });
  });

  it("takes a bare server and URI", () => {
    expect(asOpenTarget({ server: "s", uri: "file:///etc/passwd" })).toEqual({
      server: "s",
      uri: "file:///etc/passwd",
    });
  });

  it("finds the resource inside a tree node", () => {
    expect(asOpenTarget({ kind: "resource", item: { server: "s", uri: "x://a", name: "a" } })).toEqual({
      server: "s",
      uri: "x://a",
      name: "a",
    });
  });

  it("refuses anything without a server and a URI", () => {
    expect(asOpenTarget(undefined)).toBeUndefined();
    expect(asOpenTarget("x://a")).toBeUndefined();
    expect(asOpenTarget({ server: "s" })).toBeUndefined();
    expect(asOpenTarget({ server: 1, uri: "x://a" })).toBeUndefined();
    expect(asOpenTarget({ server: "", uri: "x://a" })).toBeUndefined();
  });
});

describe("templateResultName", () => {
  const template = { name: "file", title: "A file inside a shared folder" };

  it("names a template's result by the file name at the end of its URI", () => {
    expect(templateResultName(template, "file:///tmp/work/alpha/data.bin")).toBe("data.bin");
    expect(templateResultName(template, "file:///tmp/my%20notes/plan%20v2.txt")).toBe("plan v2.txt");
  });

  it("keeps the template's name when the URI ends in something that is no file name", () => {
    expect(templateResultName({ name: "Dynamic Blob Resource" }, "demo://resource/dynamic/blob/5")).toBe(
      "Dynamic Blob Resource 5",
    );
    expect(templateResultName(template, "test://search?q=x")).toBe("A file inside a shared folder search");
    expect(templateResultName(template, "urn:")).toBe("A file inside a shared folder");
  });
});

describe("withServer", () => {
  it("puts the server's label in front of the description", () => {
    const text = resourceText(resource("everything", "architecture.md", { mimeType: "text/markdown" }));
    expect(withServer(text, "everything")).toEqual({ ...text, description: "everything · text/markdown" });
  });

  it("makes the label the whole description when there was none, without rendering icon syntax", () => {
    const text = resourceText(resource("srv", "plain"));
    expect(withServer(text, "$(alert) srv").description).toBe("$\u200B(alert) srv");
  });
});

describe("argumentChoices", () => {
  it("offers the value as typed, then the server's suggestions, none hidden by the picker's filter", () => {
    expect(argumentChoices("no", ["notes", "notes/plan.txt"])).toEqual([
      { value: "no", label: "no", description: "the value as typed", alwaysShow: true },
      { value: "notes", label: "notes", alwaysShow: true },
      { value: "notes/plan.txt", label: "notes/plan.txt", alwaysShow: true },
    ]);
  });

  it("offers the typed value once when a suggestion is the same", () => {
    expect(argumentChoices("notes", ["notes"])).toEqual([{ value: "notes", label: "notes", alwaysShow: true }]);
  });

  it("names an empty value, and shows icon syntax literally", () => {
    expect(argumentChoices("", [])).toEqual([
      { value: "", label: "(empty)", description: "the value as typed", alwaysShow: true },
    ]);
    expect(argumentChoices("$(alert)", ["$(x)"]).map((choice) => [choice.value, choice.label])).toEqual([
      ["$(alert)", "$\u200B(alert)"],
      ["$(x)", "$\u200B(x)"],
    ]);
  });
});

describe("knownArguments", () => {
  it("gives the values of the variables before the one asked, skipping those without one", () => {
    const variables = ["owner", "repo", "path"];
    expect(knownArguments(variables, { owner: "me", path: "later" }, 0)).toEqual({});
    expect(knownArguments(variables, { owner: "me", path: "later" }, 2)).toEqual({ owner: "me" });
    expect(knownArguments(variables, { owner: "me", repo: "r", path: "p" }, 2)).toEqual({ owner: "me", repo: "r" });
  });
});
