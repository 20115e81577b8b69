import { describe, expect, it } from "vitest";
import { lastItem, listItems, listVariables, templateArguments } from "../../../src/picker/templateVariables";

describe("listVariables", () => {
  it("names only the variables with the explode modifier, in every operator form", () => {
    const template = "file:///{+base}{/path*}{?q,tags*}{&page}{#frag*}{;keys*}{.ext:3}";
    expect([...listVariables(template)].sort()).toEqual(["frag", "keys", "path", "tags"]);
  });

  it("finds no list in a template without expressions or with a prefix modifier only", () => {
    expect(listVariables("test://res/plain").size).toBe(0);
    expect(listVariables("test://res/{name:4}").size).toBe(0);
  });

  it("ignores a malformed expression instead of guessing", () => {
    expect(listVariables("test://{bad name*}/{ok*}")).toEqual(new Set(["ok"]));
  });
});

describe("templateArguments", () => {
  it("sends a list for an exploded variable and the typed text for the others", () => {
    expect(templateArguments("search://{?q,tags*}", { q: "a,b", tags: " red, green ,,blue " })).toEqual({
      q: "a,b",
      tags: ["red", "green", "blue"],
    });
  });

  it("sends an empty list when nothing but commas was typed for a list", () => {
    expect(listItems(" , ,")).toEqual([]);
  });
});

describe("lastItem", () => {
  it("splits a list being typed into the finished items and the one being completed", () => {
    expect(lastItem("red, green, bl")).toEqual({ head: "red, green,", last: "bl" });
    expect(lastItem("red")).toEqual({ head: "", last: "red" });
    expect(lastItem("red,")).toEqual({ head: "red,", last: "" });
  });
});
