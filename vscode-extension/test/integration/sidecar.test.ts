// The extension's protocol against the real sidecar, without VS Code: `python -m host_bridge serve` driven over
// stdio with vscode-jsonrpc and the generated message types, with the repository's fixture MCP servers behind it.
// The tests share one sidecar and run in order, as one editor session would.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { CancellationTokenSource, type RequestParam, type RequestType, ResponseError } from "vscode-jsonrpc/node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as protocol from "../../src/protocol";
import { configurationParams, sidecarSettings } from "../../src/sidecar/settingsModel";
import { foldersText, sandboxText } from "../../src/status/statusModel";
import { PYTHON, REPO, fixtureServer, folderUri, recordLines, recordedRoots } from "./fixtures";
import { alive, childrenOf, commandLine } from "./processes";
import { SidecarProcess } from "./sidecarProcess";
import { waitFor, withTimeout } from "./waitFor";

/** A server start: a Python process importing the MCP SDK on a shared two-core machine. */
const START_MS = 60_000;
/** Any other event. */
const EVENT_MS = 30_000;
/** Pins a fixture to the handshake era, the only one in which a server asks for roots (roots_recorder.py) and
 * gets updates of subscribed resources without a listen stream (resources_server.py). */
const HANDSHAKE = ["--pin", "2025-11-25"];

let work: string;
let alpha: string;
let beta: string;
let alphaUri: string;
let betaUri: string;
/** A project inside alpha: once alpha is shared, a server sees it through alpha. */
let innerUri: string;
let serversSetting: Record<string, unknown>;
let rootsRecord: string;
let hangRecord: string;
let sidecar: SidecarProcess | undefined;
let initializeResult: unknown;

/** The running sidecar (set up by beforeAll). */
function bridge(): SidecarProcess {
  if (sidecar === undefined) throw new Error("the sidecar did not start; see the beforeAll error");
  return sidecar;
}

/** A request through the generated message type, as `ctx.request` sends it. */
function request<P, R>(type: RequestType<P, R, void>, params: RequestParam<P>): Promise<R> {
  return bridge().connection.sendRequest(type, params);
}

/** The error a request failed with (fails the test if it succeeded or failed otherwise). */
async function failure(promise: Promise<unknown>): Promise<ResponseError<unknown>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ResponseError) return error;
    throw error;
  }
  throw new Error("the request succeeded, but an error answer was expected");
}

/** Every candidate folder, in the sidecar's order. */
function CANDIDATES(): protocol.Candidate[] {
  const project = (uri: string, name: string): protocol.Candidate => ({
    uri,
    name,
    kinds: ["workspaceFolder", "project"],
    markers: ["pyproject.toml"],
  });
  return [
    project(alphaUri, "alpha-project"),
    { uri: innerUri, name: "inner-project", kinds: ["project"], markers: ["pyproject.toml"], parent: alphaUri },
    project(betaUri, "beta-project"),
  ];
}

/** The roots answers the recorder got so far, as lists of URIs. */
function rootsAnswers(): string[][] {
  return recordedRoots(rootsRecord).map((answer) => answer.roots.map((root) => root.uri));
}

/** Waits until `server` reported `state` with exactly `roots` shared (order ignored). */
function untilServer(
  server: string,
  state: protocol.ServerState,
  roots: string[],
  timeoutMs: number,
): Promise<protocol.ServerStatus> {
  const wanted = [...roots].sort();
  return bridge().until(
    () => {
      const status = bridge().received.latest(server);
      const shared = status?.sharedRoots.map((root) => root.uri).sort();
      return status?.state === state && JSON.stringify(shared) === JSON.stringify(wanted) && status;
    },
    timeoutMs,
    () =>
      `server '${server}' to be ${state} sharing ${JSON.stringify(wanted)}; ` +
      `its latest serverChanged: ${JSON.stringify(bridge().received.latest(server) ?? null)}`,
  );
}

/** The test editor's consent answers: alpha allowed and the others denied for the roots recorder (as the
 * extension answers a folder left unchecked), alpha allowed for this session only (the others left out) for the
 * resources server, nothing at all for the hang server. */
function answerConsent(params: protocol.AskConsentParams): protocol.AskConsentResult {
  switch (params.server.id) {
    case "roots":
      return {
        decisions: params.roots.map((root) => ({
          uri: root.uri,
          decision: root.uri === alphaUri ? "allow" : "deny",
        })),
      };
    case "res":
      // beta is left out on purpose: a missing decision means "not allowed" and is not remembered.
      return {
        decisions: params.roots
          .filter((root) => root.uri === alphaUri)
          .map((root) => ({ uri: root.uri, decision: "allowSession" })),
      };
    default:
      return {};
  }
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "host-bridge-it-"));
  alpha = path.join(work, "ws", "alpha");
  beta = path.join(work, "ws", "beta");
  const inner = path.join(alpha, "inner");
  for (const folder of [alpha, beta, inner]) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "pyproject.toml"), `[project]\nname = "${path.basename(folder)}-project"\n`);
  }
  alphaUri = folderUri(alpha);
  betaUri = folderUri(beta);
  innerUri = folderUri(inner);
  rootsRecord = path.join(work, "roots.jsonl");
  hangRecord = path.join(work, "hang.jsonl");
  const storageDir = path.join(work, "storage");

  sidecar = SidecarProcess.start({ python: PYTHON, cwd: REPO, answerConsent });
  serversSetting = {
    roots: fixtureServer("roots_recorder.py", ...HANDSHAKE, "--record", rootsRecord),
    res: fixtureServer("resources_server.py", ...HANDSHAKE, "--list-changed", "--count", "25", "--page-size", "10"),
    hang: fixtureServer("resources_server.py", "--fault", "hang-read", "--record", hangRecord),
  };
  const options: protocol.InitializationOptions = {
    storageDir,
    servers: serversSetting,
    readWorkspaceConfig: false,
    consentTimeout: 30,
    // The fixture servers write their record files outside the folders shared with them, which the default OS
    // sandbox refuses; the sandbox itself is tested by the Python suite and the editor tests (sandbox.spec.ts).
    sandbox: "off",
  };
  try {
    initializeResult = await withTimeout(
      sidecar.connection.sendRequest("initialize", {
        processId: process.pid,
        clientInfo: { name: "host-bridge integration test" },
        rootUri: null,
        workspaceFolders: [
          { uri: alphaUri, name: "alpha" },
          { uri: betaUri, name: "beta" },
        ],
        capabilities: {
          experimental: { hostBridge: { consentUi: true } },
          window: { workDoneProgress: true },
        },
        initializationOptions: options,
      }),
      START_MS,
      "the answer to initialize",
    );
    await sidecar.connection.sendNotification("initialized", {});
  } catch (error) {
    console.error(sidecar.diagnostics());
    throw error;
  }
});

beforeEach((context) => {
  context.onTestFailed(() => {
    if (sidecar !== undefined) console.error(sidecar.diagnostics());
  });
});

afterAll(async () => {
  await sidecar?.stop(EVENT_MS);
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("the sidecar driven over stdio with the generated protocol types", () => {
  it("answers initialize as host-bridge", () => {
    expect(initializeResult).toMatchObject({ serverInfo: { name: "host-bridge" } });
  });

  it("asks consent once per server about every candidate folder, describing what runs", async () => {
    const asks = await bridge().until(
      () => bridge().received.asks.length >= 3 && bridge().received.asks,
      START_MS,
      "three askConsent requests",
    );
    expect(asks.map((ask) => ask.server.id).sort()).toEqual(["hang", "res", "roots"]);
    const roots = asks.find((ask) => ask.server.id === "roots");
    expect(roots).toEqual({
      server: {
        id: "roots",
        label: "roots",
        source: "settings",
        transport: "stdio",
        command: PYTHON,
        args: [path.join(REPO, "tests", "servers", "roots_recorder.py"), ...HANDSHAKE, "--record", rootsRecord],
        // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any
        identity: expect.any(String),
        workspaceDefined: false,
        executable: PYTHON,
        env: [],
        envReferences: [],
        headerNames: [],
        passesSharedFolders: false,
      },
      roots: CANDIDATES(),
      trustRequired: false,
      visibleThrough: [],
      batch: [],
    });
  });

  it("gives two servers with the same command different identities", () => {
    const identities = bridge().received.asks.map((ask) => ask.server.identity);
    expect(new Set(identities).size).toBe(identities.length);
  });

  it("shares exactly the allowed folder with the roots recorder", async () => {
    const status = await untilServer("roots", "running", [alphaUri], START_MS);
    expect(status.sharedRoots).toEqual([{ uri: alphaUri, name: "alpha-project" }]);
    await waitFor(
      () => JSON.stringify(rootsAnswers().at(-1)) === JSON.stringify([alphaUri]),
      EVENT_MS,
      "the recorder to receive alpha as its only root",
    );
    expect(rootsAnswers().flat()).not.toContain(betaUri);
  });

  it("reports every server and candidate in status", async () => {
    await untilServer("res", "running", [alphaUri], START_MS);
    await untilServer("hang", "running", [], START_MS);
    const status = await request(protocol.status, {});
    expect(status.servers.map((server) => [server.id, server.state])).toEqual([
      ["roots", "running"],
      ["res", "running"],
      ["hang", "running"],
    ]);
    const res = status.servers[1];
    expect(res.resources).toEqual({ subscribe: true, listChanged: true });
    expect(res.protocolVersion).toBe("2025-11-25");
    expect(res.sharedRoots).toEqual([{ uri: alphaUri, name: "alpha-project" }]);
    expect(status.candidates).toEqual(CANDIDATES());
  });

  it("runs every server without the OS sandbox when initializationOptions.sandbox is off, and status says so", async () => {
    const status = await request(protocol.status, {});
    for (const server of status.servers) {
      expect(server.sandbox, server.id).toMatchObject({ setting: "off", enforced: false });
      expect(server.reach, server.id).not.toContain("sandbox");
      expect(sandboxText(server), server.id).toMatch(/^not sandboxed: /);
    }
  });

  it("tells a server that asked for its roots from one that was only offered them", async () => {
    const status = await request(protocol.status, {});
    const roots = status.servers.find((server) => server.id === "roots");
    expect(roots?.reach).toEqual(["roots"]);
    expect(roots?.rootsAskedAt).toBeDefined();
    expect(roots && foldersText(roots)).toMatch(/^shares alpha-project — asked for its folders at \d\d:\d\d:\d\d$/);
  });

  it("names the folder a server sees only through a shared one", async () => {
    const status = await request(protocol.status, {});
    const roots = status.servers.find((server) => server.id === "roots");
    expect(roots?.sharedRoots).toEqual([{ uri: alphaUri, name: "alpha-project" }]);
    expect(roots?.visibleThrough).toEqual([{ uri: innerUri, through: alphaUri }]);
    expect(status.servers.find((server) => server.id === "hang")?.visibleThrough).toEqual([]);
  });

  it("pages through a server's resources with nextCursor", async () => {
    const first = await request(protocol.listResources, { server: "res" });
    expect(first.items.map((item) => item.uri)).toEqual(range(0, 10).map((i) => `test://res/${i}`));
    expect(first.warnings).toEqual([]);
    expect(first.items[0]).toEqual({
      server: "res",
      uri: "test://res/0",
      name: "res-00000",
      title: "Resource 0",
      description: "Description of resource 0",
      mimeType: "text/plain",
      size: 16,
      annotations: { audience: ["user"], priority: 0 },
    });
    expect(first.nextCursor).toEqual(expect.any(String));

    const second = await request(protocol.listResources, { server: "res", cursor: first.nextCursor });
    expect(second.items.map((item) => item.uri)).toEqual(range(10, 20).map((i) => `test://res/${i}`));
    const third = await request(protocol.listResources, { server: "res", cursor: second.nextCursor });
    expect(third.items.map((item) => item.uri)).toEqual(range(20, 25).map((i) => `test://res/${i}`));
    expect(third.nextCursor).toBeUndefined();
  });

  it("lists with a limit from the sidecar's kept list, as the picker does: a short first page, then the rest", async () => {
    const first = await request(protocol.listResources, { server: "res", limit: 7 });
    expect(first.items.map((item) => item.uri)).toEqual(range(0, 7).map((i) => `test://res/${i}`));
    const rest: protocol.ResourceItem[] = [];
    let cursor = first.nextCursor;
    while (cursor !== undefined) {
      const page = await request(protocol.listResources, { server: "res", cursor, limit: 10_000 });
      expect(page.warnings).toEqual([]);
      rest.push(...page.items);
      cursor = page.nextCursor;
    }
    expect(rest.map((item) => item.uri)).toEqual(range(7, 25).map((i) => `test://res/${i}`));
  });

  it("filters each page by query, ignoring case", async () => {
    const first = await request(protocol.listResources, { server: "res", query: "RES/2" });
    expect(first.items.map((item) => item.uri)).toEqual(["test://res/2"]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const all = await listAll("res", "RES/2");
    expect(all.map((item) => item.uri)).toEqual(["test://res/2", ...range(20, 25).map((i) => `test://res/${i}`)]);
    const byDescription = await listAll("res", "description of resource 8");
    expect(byDescription.map((item) => item.uri)).toEqual(["test://res/8"]);
  });

  it("aggregates every running server when no server is named", async () => {
    const page = await request(protocol.listResources, {});
    expect(page.items.slice(0, 2).map((item) => [item.server, item.uri])).toEqual([
      ["roots", "recorder://roots"],
      ["roots", "recorder://roots/latest"],
    ]);
    const perServer = new Map<string, number>();
    for (const item of page.items) perServer.set(item.server, (perServer.get(item.server) ?? 0) + 1);
    // Servers in configuration order, one page (of 10) each.
    expect([...perServer]).toEqual([
      ["roots", 2],
      ["res", 10],
      ["hang", 10],
    ]);
    expect(page.nextCursor).toEqual(expect.any(String));
    expect(page.warnings).toEqual([]);
  });

  it("reports work-done progress under the editor's token", async () => {
    bridge().watchProgress("listing-1");
    const page = await request(protocol.listResources, { server: "res", workDoneToken: "listing-1" });
    expect(page.items).toHaveLength(10);
    const progress = bridge().progress.get("listing-1") ?? [];
    expect(progress.map((value) => value.kind)).toEqual(["begin", "report", "end"]);
    expect(progress[0].title).toBe("Listing MCP resources");
    expect(progress.at(-1)?.message).toBe("10 resources; more to come");
  });

  it("lists resource templates with their variables", async () => {
    const templates = await request(protocol.listResourceTemplates, { server: "res" });
    expect(templates.items).toEqual([
      {
        server: "res",
        uriTemplate: "test://items/{category}/{id}",
        name: "item",
        description: "An item by category",
        mimeType: "text/plain",
        variables: ["category", "id"],
      },
      { server: "res", uriTemplate: "test://search{?q}", name: "search", mimeType: "text/plain", variables: ["q"] },
    ]);
  });

  it("completes template arguments, using the arguments already filled in", async () => {
    const categories = await request(protocol.completeArgument, {
      server: "res",
      uriTemplate: "test://items/{category}/{id}",
      name: "category",
      value: "b",
    });
    expect(categories).toEqual({ values: ["books", "bikes", "boats"], total: 3, hasMore: false });
    const ids = await request(protocol.completeArgument, {
      server: "res",
      uriTemplate: "test://items/{category}/{id}",
      name: "id",
      value: "c-7",
      arguments: { category: "cars" },
    });
    expect(ids.values).toEqual(["c-7", "c-70", "c-700"]);
  });

  it("reads text, base64 blobs and expanded templates", async () => {
    const text = await request(protocol.readResource, { server: "res", uri: "test://res/3" });
    expect(text).toEqual({
      uri: "test://res/3",
      contents: [{ uri: "test://res/3", mimeType: "text/plain", text: "content of res 3" }],
    });

    const blob = await request(protocol.readResource, { server: "res", uri: "test://blob/300" });
    expect(blob.contents).toHaveLength(1);
    expect(blob.contents[0].mimeType).toBe("application/octet-stream");
    expect(blob.contents[0].text).toBeUndefined();
    const bytes = Buffer.from(blob.contents[0].blob ?? "", "base64");
    expect([...bytes]).toEqual(range(0, 300).map((i) => i % 256));

    const item = await request(protocol.readResource, {
      server: "res",
      uriTemplate: "test://items/{category}/{id}",
      arguments: { category: "cars", id: "c-7" },
    });
    expect(item).toEqual({
      uri: "test://items/cars/c-7",
      contents: [{ uri: "test://items/cars/c-7", mimeType: "text/plain", text: "expanded test://items/cars/c-7" }],
    });
    const search = await request(protocol.readResource, {
      server: "res",
      uriTemplate: "test://search{?q}",
      arguments: { q: "a b" },
    });
    expect(search.uri).toBe("test://search?q=a%20b");
  });

  it("answers a missing resource with -32002 naming the URI", async () => {
    const error = await failure(request(protocol.readResource, { server: "res", uri: "test://res/999" }));
    expect(error.code).toBe(-32002);
    expect(error.data).toEqual({ uri: "test://res/999" });
    expect(error.message).toContain("test://res/999");
  });

  it("answers an unknown server with -32602 naming it", async () => {
    const error = await failure(request(protocol.readResource, { server: "nope", uri: "test://res/1" }));
    expect(error.code).toBe(-32602);
    expect(error.data).toEqual({ server: "nope" });
    expect(error.message).toContain("'nope'");
  });

  it("answers a template read without its variables with -32602", async () => {
    const error = await failure(
      request(protocol.readResource, {
        server: "res",
        uriTemplate: "test://items/{category}/{id}",
        arguments: { category: "cars" },
      }),
    );
    expect(error.code).toBe(-32602);
    expect(error.message).toContain("id");
  });

  it("forwards updates of a subscribed resource until it is unsubscribed", async () => {
    const received = bridge().received;
    expect(await request(protocol.subscribe, { server: "res", uri: "test://res/1" })).toBeNull();
    const changesBefore = received.resourcesChanged.length;

    await request(protocol.readResource, { server: "res", uri: "test://control/touch/1" });
    await bridge().until(
      () => received.resourceUpdated.some((update) => update.server === "res" && update.uri === "test://res/1"),
      EVENT_MS,
      "resourceUpdated for test://res/1",
    );
    await bridge().until(
      () => received.resourcesChanged.length > changesBefore,
      EVENT_MS,
      "resourcesChanged after the touch",
    );
    expect(received.resourceUpdated).toEqual([{ server: "res", uri: "test://res/1" }]);
    expect(received.resourcesChanged.slice(changesBefore)).toEqual([{ server: "res" }]);

    expect(await request(protocol.unsubscribe, { server: "res", uri: "test://res/1" })).toBeNull();
    await request(protocol.readResource, { server: "res", uri: "test://control/touch/1" });
    await bridge().until(
      () => received.resourcesChanged.length > changesBefore + 1,
      EVENT_MS,
      "resourcesChanged after the second touch",
    );
    // The list change and the update are sent together, so the update would have arrived by now.
    expect(received.resourceUpdated).toEqual([{ server: "res", uri: "test://res/1" }]);
  });

  it("announces a grown resource list with resourcesChanged", async () => {
    const received = bridge().received;
    const changesBefore = received.resourcesChanged.length;
    const grown = await request(protocol.readResource, { server: "res", uri: "test://control/grow" });
    expect(grown.contents[0].text).toBe("count is now 26");
    await bridge().until(
      () => received.resourcesChanged.length > changesBefore,
      EVENT_MS,
      "resourcesChanged after the list grew",
    );
    expect(received.resourcesChanged.slice(changesBefore)).toEqual([{ server: "res" }]);
    const last = await listAll("res", "res-00025");
    expect(last.map((item) => item.uri)).toEqual(["test://res/25"]);
  });

  it("shares a folder allowed with setConsent and withdraws it on deny", async () => {
    const answersBefore = rootsAnswers().length;
    expect(await request(protocol.setConsent, { server: "roots", uri: betaUri, decision: "allow" })).toEqual({
      saved: true,
      applied: "allow",
    });
    await untilServer("roots", "running", [alphaUri, betaUri], EVENT_MS);
    const both = await waitFor(
      () => rootsAnswers().length > answersBefore && recordedRoots(rootsRecord).at(-1),
      EVENT_MS,
      "the recorder to fetch its roots again",
    );
    expect(both.trigger).toBe("list_changed");
    expect(both.roots.map((root) => root.uri).sort()).toEqual([alphaUri, betaUri].sort());

    const answersWithBoth = rootsAnswers().length;
    expect(await request(protocol.setConsent, { server: "roots", uri: betaUri, decision: "deny" })).toEqual({
      saved: true,
      applied: "deny",
    });
    await untilServer("roots", "running", [alphaUri], EVENT_MS);
    const one = await waitFor(
      () => rootsAnswers().length > answersWithBoth && recordedRoots(rootsRecord).at(-1),
      EVENT_MS,
      "the recorder to fetch its roots after the deny",
    );
    expect(one.roots.map((root) => root.uri)).toEqual([alphaUri]);
  });

  it("says when a denied folder stays visible through a shared parent", async () => {
    const result = await request(protocol.setConsent, { server: "roots", uri: innerUri, decision: "deny" });
    expect(result).toMatchObject({ saved: true, applied: "deny", visibleThrough: alphaUri });
    expect(result.message).toContain("stop sharing");
    // The extension shows that sentence itself: the sidecar sends no message of its own to a consentUi editor.
    expect(bridge().received.logs.filter((log) => log.message.includes("still visible"))).toEqual([]);
  });

  it("re-loads the servers sent with workspace/didChangeConfiguration without restarting the others", async () => {
    const received = bridge().received;
    const seen = { roots: received.states("roots").length, asks: received.asks.length };
    const late = { ...serversSetting, late: fixtureServer("resources_server.py", "--count", "1") };
    await bridge().connection.sendNotification(
      "workspace/didChangeConfiguration",
      configurationParams(sidecarSettings(late, true, false)),
    );
    const ask = await bridge().until(
      () => received.asks.slice(seen.asks).find((params) => params.server.id === "late"),
      START_MS,
      "the new server 'late' to ask for consent",
    );
    expect(ask.roots.map((root) => root.uri)).toEqual(CANDIDATES().map((candidate) => candidate.uri));
    await untilServer("late", "running", [], START_MS);

    await bridge().connection.sendNotification(
      "workspace/didChangeConfiguration",
      configurationParams(sidecarSettings(serversSetting, true, false)),
    );
    const isLate = (pid: number): boolean => / --count 1$/.test(commandLine(pid));
    await waitFor(
      () => !childrenOf(bridge().child.pid ?? -1).some(isLate),
      EVENT_MS,
      "the process of the removed server 'late' to end",
    );
    const status = await request(protocol.status, {});
    expect(status.servers.map((server) => server.id)).toEqual(["roots", "res", "hang"]);
    expect(received.states("roots").slice(seen.roots)).toEqual([]);
  });

  it("refuses consent for a URI that is not a file folder", async () => {
    const error = await failure(
      request(protocol.setConsent, { server: "roots", uri: "http://x/y", decision: "allow" }),
    );
    expect(error.code).toBe(-32602);
  });

  it("restarts a server as a new process that runs again with its shared folder", async () => {
    const received = bridge().received;
    const seen = received.states("res").length;
    expect(await request(protocol.restartServer, { server: "res" })).toBeNull();
    await bridge().until(
      () => received.states("res").slice(seen).includes("running") && received.states("res").slice(seen),
      START_MS,
      "server 'res' to run again",
    );
    // Said at once ("restarting"): the old process is never reported as running while it is replaced.
    expect(received.states("res").slice(seen)).toEqual(["restarting", "starting", "running"]);
    expect(received.latest("res")?.sharedRoots).toEqual([{ uri: alphaUri, name: "alpha-project" }]);
    // A new process: the resource added by test://control/grow is gone.
    expect(await listAll("res", "res-00025")).toEqual([]);
    expect(await listAll("res")).toHaveLength(25);
  });

  it("cancels a pending read and the MCP request with it", async () => {
    const source = new CancellationTokenSource();
    const reading = bridge().connection.sendRequest(
      protocol.readResource,
      { server: "hang", uri: "test://res/1" },
      source.token,
    );
    const parked = await waitFor(
      () => recordLines(hangRecord).find((line) => "reading" in line),
      EVENT_MS,
      "the hang server to park the read",
    );
    source.cancel();
    const error = await failure(withTimeout(reading, EVENT_MS, "the cancelled read to fail"));
    expect(error.code).toBe(-32800);
    const cancelled = await waitFor(
      () => recordLines(hangRecord).find((line) => "cancelled" in line),
      EVENT_MS,
      "the hang server to receive notifications/cancelled",
    );
    expect(cancelled.cancelled).toBe(parked.reading);
  });

  it("sends no request or notification outside the protocol", () => {
    expect(bridge().received.unexpected).toEqual([]);
  });

  it("stops every MCP server and exits 0 on shutdown and exit", async () => {
    const running = bridge();
    const children = childrenOf(running.child.pid ?? -1);
    expect(children.map(commandLine).filter((command) => command.includes("tests/servers/"))).toHaveLength(3);
    const exit = await running.shutdown(EVENT_MS);
    expect(exit).toEqual({ code: 0, signal: null });
    await waitFor(() => children.every((pid) => !alive(pid)), EVENT_MS, "the MCP servers to end");
  });
});

/** Every item of a listing, following nextCursor (at most 20 pages). */
async function listAll(server: string, query?: string): Promise<protocol.ResourceItem[]> {
  const items: protocol.ResourceItem[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const page = await request(protocol.listResources, { server, query, cursor });
    expect(page.warnings).toEqual([]);
    items.push(...page.items);
    cursor = page.nextCursor;
    if (cursor === undefined) return items;
  }
  throw new Error(`the listing of '${server}' did not end after 20 pages`);
}

/** The integers from `start` up to (not including) `end`. */
function range(start: number, end: number): number[] {
  return Array.from({ length: end - start }, (_, i) => start + i);
}
