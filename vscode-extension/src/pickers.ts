// "MCP: Pick Resource" and "MCP: Insert Resource": one quick pick over every server's resources and
// templates, filled page by page as the sidecar answers; templates ask their variables with completions.
import * as vscode from "vscode";
import { SidecarError, type Ctx } from "./ctx";
import { type ResourceDocuments, insertionFor, readWithProgress, type OpenTarget } from "./documents";
import * as protocol from "./protocol";
import {
  ResourceCatalog,
  type RowText,
  displayName,
  resourceText,
  templateResultName,
  templateText,
  withServer,
  type Row,
} from "./resourceModel";
import { serverLabel } from "./statusModel";
import { askArguments } from "./templateArguments";
import { errorMessage, noIcons, product } from "./text";

interface RowItem extends vscode.QuickPickItem {
  readonly row: Row;
}

// While pages keep arriving the list is replaced at most this often: every replacement sends the whole
// list to the renderer.
const RENDER_INTERVAL_MS = 200;

/** Quick pick items for catalog rows, made once per resource so replacing the list stays cheap. */
class RowItems {
  private readonly byItem = new WeakMap<object, RowItem>();
  /** The same rows naming their server, for while the user filters (the separators are gone then). */
  private readonly byItemNamed = new WeakMap<object, RowItem>();
  private readonly separators = new Map<string, RowItem>();
  private readonly warnings = new Map<string, RowItem>();

  /** The item for `row`; with `serverLabel`, resources and templates name their server in the description. */
  itemFor(row: Row, serverLabel?: (server: string) => string): RowItem {
    switch (row.kind) {
      case "separator":
        return this.cached(this.separators, `${row.server}\n${row.label}`, () => ({
          row,
          label: noIcons(row.label),
          kind: vscode.QuickPickItemKind.Separator,
        }));
      case "warning":
        return this.cached(this.warnings, row.text, () => ({
          row,
          label: `$(warning) ${noIcons(row.text)}`,
          detail: "Select to show the log.",
          alwaysShow: true,
        }));
      case "resource":
        return this.textItem(row, row.item, () => resourceText(row.item), "", serverLabel);
      case "template":
        return this.textItem(row, row.item, () => templateText(row.item), "$(symbol-variable) ", serverLabel);
    }
  }

  private textItem(
    row: Row,
    key: protocol.ResourceItem | protocol.TemplateItem,
    text: () => RowText,
    icon: string,
    serverLabel: ((server: string) => string) | undefined,
  ): RowItem {
    const cache = serverLabel === undefined ? this.byItem : this.byItemNamed;
    let item = cache.get(key);
    if (item === undefined) {
      const shown = serverLabel === undefined ? text() : withServer(text(), serverLabel(key.server));
      item = { row, label: `${icon}${shown.label}`, description: shown.description, detail: shown.detail };
      cache.set(key, item);
    }
    return item;
  }

  private cached(map: Map<string, RowItem>, key: string, make: () => RowItem): RowItem {
    let item = map.get(key);
    if (item === undefined) {
      item = make();
      map.set(key, item);
    }
    return item;
  }
}

type Choice =
  | { readonly kind: "resource"; readonly item: protocol.ResourceItem }
  | { readonly kind: "template"; readonly item: protocol.TemplateItem };

/** Whether two rows show the same resource, template, warning or separator (also across a re-listing). */
function sameEntry(a: Row, b: Row): boolean {
  switch (a.kind) {
    case "resource":
      return b.kind === "resource" && b.item.server === a.item.server && b.item.uri === a.item.uri;
    case "template":
      return b.kind === "template" && b.item.server === a.item.server && b.item.uriTemplate === a.item.uriTemplate;
    case "warning":
      return b.kind === "warning" && b.text === a.text;
    case "separator":
      return b.kind === "separator" && b.server === a.server;
  }
}

/** Show the resource quick pick; the chosen resource or template, `undefined` when dismissed. */
function chooseRow(ctx: Ctx, title: string): Promise<Choice | undefined> {
  const picker = vscode.window.createQuickPick<RowItem>();
  picker.title = title;
  const placeholder = "Filter by title, name, URI or description";
  picker.placeholder = placeholder;
  picker.matchOnDescription = true;
  picker.matchOnDetail = true;
  picker.keepScrollPosition = true;
  picker.busy = true;

  const cancellation = new vscode.CancellationTokenSource();
  const token = cancellation.token;
  const labelOf = (id: string): string => {
    const server = ctx.servers.get(id);
    return server === undefined ? id : serverLabel(server);
  };
  const catalog = new ResourceCatalog([...ctx.servers.keys()], labelOf);
  const items = new RowItems();
  let renderTimer: ReturnType<typeof setTimeout> | undefined;
  let lastRender = 0;
  let loading = true;

  let filtering = false;

  const render = (): void => {
    if (renderTimer !== undefined) {
      clearTimeout(renderTimer);
      renderTimer = undefined;
    }
    lastRender = Date.now();
    const active = picker.activeItems[0];
    const shown = catalog.rows().map((row) => items.itemFor(row, filtering ? labelOf : undefined));
    picker.items = shown;
    // Replacing the items moves the selection to the top: keep the one the user moved to (also when it was
    // swapped for the variant naming its server, or re-listed), and never start on a warning, so Enter opens
    // a resource. A re-listing may drop it; then an empty filter starts again on the first resource.
    const kept = active === undefined ? undefined : shown.find((item) => sameEntry(item.row, active.row));
    if (kept !== undefined && kept.row.kind !== "warning") {
      picker.activeItems = [kept];
    } else if (picker.value === "") {
      const first = shown.find((item) => item.row.kind === "resource" || item.row.kind === "template");
      if (first !== undefined) {
        picker.activeItems = [first];
      }
    }
    if (loading || catalog.size > 0) {
      picker.placeholder = placeholder;
    } else {
      picker.placeholder =
        catalog.warnings.length > 0
          ? "No resources could be listed; see the warnings above."
          : 'No MCP server offers resources right now. Run "MCP: Show Server Status" to see why.';
    }
  };
  const scheduleRender = (): void => {
    if (renderTimer !== undefined) {
      return;
    }
    const wait = Math.max(0, lastRender + RENDER_INTERVAL_MS - Date.now());
    renderTimer = setTimeout(render, wait);
  };

  // Servers listed again after they said their list changed: their fresh listing replaces whatever the first
  // listing still brings of them.
  const relisted = new Set<string>();
  /** The re-listing under way per server; a newer one cancels it. */
  const relistings = new Map<string, vscode.CancellationTokenSource>();
  const addWarnings = (warnings: readonly string[]): void => {
    for (const warning of warnings) {
      ctx.log.warn(`Listing resources: ${warning}`);
    }
    catalog.addWarnings(warnings);
  };

  /** Every page of resources for `params`, handed to `onPage` as it comes, until the last or a repeated cursor. */
  const listPages = async (
    params: protocol.ListResourcesParams,
    onPage: (page: protocol.ResourcePage) => void,
    pagesToken: vscode.CancellationToken = token,
  ): Promise<void> => {
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const request = cursor === undefined ? params : { ...params, cursor };
      const page = await ctx.request(protocol.listResources, request, pagesToken);
      if (pagesToken.isCancellationRequested) {
        return;
      }
      onPage(page);
      addWarnings(page.warnings);
      cursor = page.nextCursor;
      if (cursor !== undefined && seen.has(cursor)) {
        catalog.addWarnings(["The host bridge repeated a page of resources; the list may be incomplete."]);
        return;
      }
      if (cursor !== undefined) {
        seen.add(cursor);
      }
    } while (cursor !== undefined);
  };
  const loadResources = (): Promise<void> =>
    listPages({}, (page) => {
      catalog.addResources(page.items.filter((item) => !relisted.has(item.server)));
      scheduleRender();
    });
  const loadTemplates = async (): Promise<void> => {
    const result = await ctx.request(protocol.listResourceTemplates, {}, token);
    if (!token.isCancellationRequested) {
      catalog.addTemplates(result.items.filter((item) => !relisted.has(item.server)));
      scheduleRender();
    }
  };
  /** List `server` again; only the latest re-listing of a server is shown. */
  const relist = async (server: string): Promise<void> => {
    relistings.get(server)?.cancel();
    const source = new vscode.CancellationTokenSource();
    relistings.set(server, source);
    try {
      const resources: protocol.ResourceItem[] = [];
      await listPages({ server }, (page) => resources.push(...page.items), source.token);
      if (source.token.isCancellationRequested) {
        return;
      }
      const templates = await ctx.request(protocol.listResourceTemplates, { server }, source.token);
      if (!source.token.isCancellationRequested) {
        relisted.add(server);
        catalog.replaceServer(server, resources, templates.items);
        scheduleRender();
      }
    } finally {
      if (relistings.get(server) === source) {
        relistings.delete(server);
      }
      source.dispose();
    }
  };
  const reportFailure = (what: string) => (error: unknown) => {
    if (token.isCancellationRequested) {
      return;
    }
    if (SidecarError.isCancellation(error)) {
      return;
    }
    const message = errorMessage(error);
    ctx.log.error(`${what}: ${message}`);
    catalog.addWarnings([`${what}: ${message}`]);
    scheduleRender();
  };

  return new Promise<Choice | undefined>((resolve) => {
    let settled = false;
    const finish = (choice: Choice | undefined): void => {
      if (!settled) {
        settled = true;
        resolve(choice);
      }
    };
    picker.onDidChangeValue((value) => {
      if ((value !== "") !== filtering) {
        filtering = value !== "";
        render();
      }
    });
    picker.onDidAccept(() => {
      const row = picker.selectedItems[0]?.row ?? picker.activeItems[0]?.row;
      if (row === undefined || row.kind === "separator") {
        return;
      }
      if (row.kind === "warning") {
        ctx.log.show(true);
        return;
      }
      finish(row);
      picker.hide();
    });
    const listChanged = ctx.onResourcesChanged(({ server }) => {
      relist(server).catch(reportFailure(`Listing the resources of ${labelOf(server)} again failed`));
    });
    picker.onDidHide(() => {
      listChanged.dispose();
      for (const source of relistings.values()) {
        source.cancel();
      }
      cancellation.cancel();
      cancellation.dispose();
      if (renderTimer !== undefined) {
        clearTimeout(renderTimer);
      }
      picker.dispose();
      finish(undefined);
    });
    picker.show();
    void Promise.allSettled([
      loadResources().catch(reportFailure("Listing MCP resources failed")),
      loadTemplates().catch(reportFailure("Listing MCP resource templates failed")),
    ]).then(() => {
      loading = false;
      if (token.isCancellationRequested) {
        return;
      }
      picker.busy = false;
      render();
    });
  });
}

/**
 * Let the user choose a resource, or a template and its arguments (which is then read); what to open or
 * insert, `undefined` when the user gave up or the template could not be read (the error was shown).
 */
export async function pickResource(ctx: Ctx, title: string): Promise<OpenTarget | undefined> {
  try {
    // Fails at once with the sentence that says why the bridge is not running and what to do.
    await ctx.status();
  } catch (error) {
    ctx.showError("Cannot list MCP resources", error);
    return undefined;
  }
  const choice = await chooseRow(ctx, title);
  if (choice === undefined) {
    return undefined;
  }
  if (choice.kind === "resource") {
    const { server, uri, mimeType } = choice.item;
    return { server, uri, name: displayName(choice.item), ...(mimeType !== undefined ? { mimeType } : {}) };
  }
  const template = choice.item;
  const args = await askArguments(ctx, template);
  if (args === undefined) {
    return undefined;
  }
  const name = displayName(template);
  try {
    const result = await readWithProgress(ctx, `Reading ${name}…`, {
      server: template.server,
      uriTemplate: template.uriTemplate,
      arguments: args,
    });
    if (result === undefined) {
      return undefined;
    }
    return {
      server: template.server,
      uri: result.uri,
      name: templateResultName(template, result.uri),
      ...(template.mimeType !== undefined ? { mimeType: template.mimeType } : {}),
      result,
    };
  } catch (error) {
    ctx.showError(`Could not read ${name}`, error);
    return undefined;
  }
}

const NO_EDITOR = product(
  'open an editor and place the cursor where the resource should go, then run "MCP: Insert Resource" again.',
);

async function insertResource(ctx: Ctx, documents: ResourceDocuments): Promise<void> {
  if (vscode.window.activeTextEditor === undefined) {
    void vscode.window.showInformationMessage(NO_EDITOR);
    return;
  }
  const target = await ctx.pickers.during(() => pickResource(ctx, product("Insert Resource")));
  if (target === undefined) {
    return;
  }
  try {
    const loaded = await documents.load(target);
    if (loaded === undefined) {
      return;
    }
    // The picker took the focus; the editor to insert into is the one active now.
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showInformationMessage(NO_EDITOR);
      return;
    }
    const text = insertionFor(loaded);
    const done = await editor.edit((builder) => {
      for (const selection of editor.selections) {
        builder.replace(selection, text);
      }
    });
    if (!done) {
      void vscode.window.showErrorMessage(
        product(
          `could not insert ${loaded.name}: the editor refused the change (is it read-only?). Try another editor.`,
        ),
      );
    }
  } catch (error) {
    ctx.showError(`Could not insert ${target.name ?? target.uri}`, error);
  }
}

/** Registers "MCP: Pick Resource" and "MCP: Insert Resource". */
export function registerPickers(ctx: Ctx, documents: ResourceDocuments): void {
  ctx.pushExtCleanup(
    vscode.commands.registerCommand("hostBridge.pickResource", async () => {
      // Marked open while its pickers show, so a consent prompt waits instead of closing them.
      const target = await ctx.pickers.during(() => pickResource(ctx, product("Pick Resource")));
      if (target !== undefined) {
        await documents.open(target);
      }
    }),
    vscode.commands.registerCommand("hostBridge.insertResource", () => insertResource(ctx, documents)),
  );
}
