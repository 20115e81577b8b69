import { describe, expect, it } from "vitest";
import { type FilterTexts, type MatchRank, prepareTexts, quickPickFilter } from "../../../src/picker/quickFilter";

function rank(filter: string, item: FilterTexts): MatchRank | undefined {
  const match = quickPickFilter(filter);
  if (match === undefined) {
    throw new Error("an empty filter keeps everything");
  }
  return match(prepareTexts(item));
}

describe("quickPickFilter", () => {
  it("keeps everything for an empty filter, or one of spaces", () => {
    expect(quickPickFilter("")).toBeUndefined();
    expect(quickPickFilter("   ")).toBeUndefined();
  });

  it("ranks a label holding the filter first, ignoring case and the spaces around it", () => {
    expect(rank("Resource 9999", { label: "Resource 9999" })).toBe(0);
    expect(rank("  resource 99 ", { label: "Resource 9999" })).toBe(0);
    expect(rank("SOURCE", { label: "Resource 9999", description: "source" })).toBe(0);
  });

  it("ranks a description or detail holding it next", () => {
    expect(rank("text/plain", { label: "readme", description: "many · text/plain" })).toBe(1);
    expect(rank("res/42", { label: "Resource 42", detail: "test://res/42" })).toBe(1);
  });

  it("reads `*` as anything, as VS Code does", () => {
    expect(rank("res*42", { label: "Resource 42" })).toBe(0);
    expect(rank("test*/4", { label: "x", detail: "test://res/42" })).toBe(1);
  });

  it("takes regular expression characters literally", () => {
    expect(rank("a.b", { label: "a.b" })).toBe(0);
    expect(rank("a.b", { label: "axb" })).toBeUndefined();
    expect(rank("(x)", { label: "f(x)" })).toBe(0);
  });

  it("does not match the icons of a label, only its text", () => {
    expect(rank("symbol", { label: "$(symbol-variable) item" })).toBeUndefined();
    expect(rank("item", { label: "$(symbol-variable) item" })).toBe(0);
    // A server's `$(` is escaped with a zero-width space: it is text, not an icon.
    expect(rank("(evil)", { label: "$\u200b(evil) name" })).toBe(0);
  });

  it("matches camel case as VS Code does: the filter's letters at the starts of words", () => {
    expect(rank("gf", { label: "getFile" })).toBe(2);
    expect(rank("rmm", { label: "ReadMe.md" })).toBe(2);
    expect(rank("fb", { label: "foo-bar" })).toBe(2);
    // An upper-case word is matched as if lower-case.
    expect(rank("rm", { label: "READ_ME" })).toBe(2);
    // Letters in order but not at the starts of words: not camel case (kept only as a subsequence).
    expect(rank("rdm", { label: "ReadMe.md" })).toBe(3);
  });

  it("keeps a subsequence of a field's start that the camel-case rule may match, last", () => {
    // VS Code's camel-case rule does not take "Resource 9999" (too many digits), but what it needs holds: kept, ranked
    // after every match VS Code would show.
    expect(rank("r9999", { label: "Resource 9999" })).toBe(3);
    expect(rank("zz", { label: "Resource 9999" })).toBeUndefined();
    // Only the first 60 characters count for it.
    expect(rank("az", { label: `a${"-".repeat(70)}z` })).toBeUndefined();
  });

  it("stays fast on names built to make camel-case matching explode", () => {
    const label = "a-".repeat(30);
    const started = performance.now();
    for (let count = 0; count < 200; count += 1) {
      expect(rank("a".repeat(29) + "b", { label })).toBeUndefined();
    }
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
