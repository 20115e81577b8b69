import { describe, expect, it } from "vitest";
import { openableSignInUrl, secretKey, signInQuestion } from "../../../src/signIn/signInModel";
import { signInWords } from "../../../src/status/statusModel";

describe("openableSignInUrl", () => {
  it("opens https sign-in pages and plain http ones on this machine", () => {
    for (const url of [
      "https://auth.example.com/authorize?client_id=x&state=y",
      "http://127.0.0.1:9000/authorize",
      "http://localhost:3000/authorize",
    ]) {
      expect(openableSignInUrl(url)).toBe(url);
    }
  });

  it("never opens javascript, data, file or command addresses, plain http elsewhere, or user names", () => {
    for (const url of [
      "javascript:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "file:///etc/passwd",
      "command:workbench.action.terminal.new",
      "vscode://ms-python.python/x",
      "http://auth.example.com/authorize",
      "https://user:pass@auth.example.com/authorize",
      "https://auth.example.com/a b",
      "not a url",
    ]) {
      expect(openableSignInUrl(url)).toBeUndefined();
    }
  });
});

describe("the sign-in question", () => {
  it("names the product and the server with its invisible characters shown", () => {
    expect(signInQuestion("docs\u202e")).toMatch(/^MCP Host Bridge: docs.*needs you to sign in/);
    expect(signInQuestion("docs\u202e")).not.toContain("\u202e");
  });

  it("keeps each server identity's secret under its own SecretStorage key", () => {
    expect(secretKey("identity:ab")).toBe("hostBridge.signIn.identity:ab");
  });
});

describe("a server's sign-in in the status picker", () => {
  it("says when a server needs a sign-in and what to do", () => {
    expect(signInWords({ signIn: { state: "required", message: "you did not sign in" } })).toEqual([
      "needs you to sign in: pick it, then Restart server",
    ]);
    expect(signInWords({ signIn: { state: "signedIn" } })).toEqual(["signed in"]);
    expect(signInWords({})).toEqual([]);
  });
});
