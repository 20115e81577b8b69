import { describe, expect, it } from "vitest";
import {
  serverIdsIn,
  stripJsonc,
  waitingPicks,
  waitingSentence,
  withServers,
} from "../../../src/consent/workspaceTrustModel";

describe("serverIdsIn", () => {
  it("names the servers of a .vscode/mcp.json in the file's order, comments and trailing commas allowed", () => {
    const text = `{
      // the project's servers
      "servers": {
        "workspace": { "type": "stdio", "command": "python", "args": ["server.py"], },
        /* an http one */ "docs": { "type": "http", "url": "https://example.invalid/mcp" },
      },
    }`;
    expect(serverIdsIn(text, "servers")).toEqual(["workspace", "docs"]);
  });

  it("reads the key the file uses: mcpServers in .mcp.json", () => {
    expect(serverIdsIn('{"mcpServers": {"a": {}}, "servers": {"b": {}}}', "mcpServers")).toEqual(["a"]);
  });

  it("gives nothing for a file that is no JSON or holds no servers object, so the file itself is named", () => {
    expect(serverIdsIn("{ not json", "servers")).toBeUndefined();
    expect(serverIdsIn('{"servers": ["a"]}', "servers")).toBeUndefined();
    expect(serverIdsIn("[]", "servers")).toBeUndefined();
    expect(serverIdsIn('{"inputs": []}', "servers")).toBeUndefined();
  });

  it("keeps comment and comma characters inside strings", () => {
    expect(stripJsonc('{"a": "//x, /*y*/ ,}", }')).toBe('{"a": "//x, /*y*/ ,}"  }');
    expect(serverIdsIn('{"servers": {"say \\"hi\\" // not a comment": {}}}', "servers")).toEqual([
      'say "hi" // not a comment',
    ]);
  });
});

describe("what waits for workspace trust", () => {
  const one = [{ path: "alpha/.vscode/mcp.json", names: ["workspace"] }];

  it("names each waiting server with its file and says trusting the workspace starts it", () => {
    expect(waitingSentence(one, false)).toBe(
      "Restricted Mode: “workspace” (alpha/.vscode/mcp.json) waits for workspace trust; trust the workspace to start it (each still asks for your trust first).",
    );
    expect(
      waitingSentence([{ path: "alpha/.vscode/mcp.json", names: ["a", "b"] }, { path: "beta/.mcp.json" }], false),
    ).toBe(
      "Restricted Mode: “a”, “b” (alpha/.vscode/mcp.json); the servers of beta/.mcp.json wait for workspace trust; trust the workspace to start them (each still asks for your trust first).",
    );
  });

  it("says nothing of a file without servers, nor when nothing waits", () => {
    expect(waitingSentence([], false)).toBe("");
    expect(waitingSentence([{ path: "alpha/.vscode/mcp.json", names: [] }], false)).toBe("");
    expect(withServers([{ path: "a", names: [] }, { path: "b" }])).toEqual([{ path: "b" }]);
  });

  it("escapes Markdown and shows invisible characters in server names", () => {
    const sentence = waitingSentence([{ path: "alpha/.vscode/mcp.json", names: ["[x](command:evil)\u202e"] }], true);
    // The escape `\u202e` shows literally: its backslash is escaped too.
    expect(sentence).toContain("“\\[x\\]\\(command:evil\\)\\\\u202e”");
    expect(sentence).toContain("alpha/\\.vscode/mcp\\.json");
  });

  it("gives the status picker one row per waiting server, without icons from the file", () => {
    expect(
      waitingPicks([{ path: "alpha/.vscode/mcp.json", names: ["$(zap)", "b"] }, { path: "beta/.mcp.json" }]),
    ).toEqual([
      {
        label: "$\u200b(zap)",
        description: "waits for workspace trust (Restricted Mode)",
        detail: "defined in alpha/.vscode/mcp.json — pick to manage workspace trust",
      },
      {
        label: "b",
        description: "waits for workspace trust (Restricted Mode)",
        detail: "defined in alpha/.vscode/mcp.json — pick to manage workspace trust",
      },
      {
        label: "the servers of beta/.mcp.json",
        description: "wait for workspace trust",
        detail: "defined in beta/.mcp.json — pick to manage workspace trust",
      },
    ]);
  });
});
