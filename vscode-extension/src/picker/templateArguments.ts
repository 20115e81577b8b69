// The arguments of a resource template: one quick pick per variable, each offering the server's completions
// for what is typed (only the answer to the latest value reaches the list), with Back to the previous one.
import * as vscode from "vscode";
import { SidecarError, type Ctx } from "../ctx";
import { LatestQuery } from "./latestQuery";
import * as protocol from "../protocol";
import { type ArgumentChoice, argumentChoices, displayName, knownArguments } from "../resources/resourceModel";
import { lastItem, listVariables, templateArguments } from "./templateVariables";
import { errorMessage, noIcons, product } from "../text";
import { KEEP_OPEN, runQuickPick } from "../ui/quickPick";

type ValueItem = vscode.QuickPickItem & ArgumentChoice;

const BACK = Symbol("back");

/**
 * Ask every variable of a template in turn; the arguments (a list of items for an exploded variable such as
 * `{?tags*}`, typed with commas between them), or `undefined` when the user gave up.
 */
export async function askArguments(
  ctx: Ctx,
  template: protocol.TemplateItem,
): Promise<Record<string, string | string[]> | undefined> {
  const values: Record<string, string> = {};
  let index = 0;
  while (index < template.variables.length) {
    const name = template.variables[index] ?? "";
    const known = knownArguments(template.variables, values, index);
    const answer = await askVariable(ctx, template, index, known, values[name] ?? "");
    if (answer === undefined) {
      return undefined;
    }
    if (answer === BACK) {
      index = Math.max(0, index - 1);
      continue;
    }
    values[name] = answer;
    index += 1;
  }
  return templateArguments(template.uriTemplate, values);
}

/** Ask one template variable, with the server's completions; the value, {@link BACK}, or `undefined`. */
function askVariable(
  ctx: Ctx,
  template: protocol.TemplateItem,
  index: number,
  known: Readonly<Record<string, string>>,
  initial: string,
): Promise<string | typeof BACK | undefined> {
  const name = template.variables[index] ?? "";
  const isList = listVariables(template.uriTemplate).has(name);
  // For a list the server completes the item being typed; a suggestion then keeps the items before it.
  const completed = (typed: string): string => (isList ? lastItem(typed).last : typed);
  const withHead = (typed: string, values: readonly string[]): string[] => {
    const head = isList ? lastItem(typed).head : "";
    return values.map((value) => (head === "" ? value : `${head} ${value}`));
  };
  const pick = vscode.window.createQuickPick<ValueItem>();
  let suggestions: readonly string[] = [];
  let completionFailed = false;
  const render = (): void => {
    pick.items = argumentChoices(pick.value, withHead(pick.value, suggestions));
  };
  const query = new LatestQuery<protocol.Completion>(
    async (value, signal) => {
      const source = new vscode.CancellationTokenSource();
      signal.addEventListener("abort", () => source.cancel());
      try {
        return await ctx.request(
          protocol.completeArgument,
          {
            server: template.server,
            uriTemplate: template.uriTemplate,
            name,
            value: completed(value),
            arguments: templateArguments(template.uriTemplate, known),
          },
          source.token,
        );
      } finally {
        source.dispose();
      }
    },
    (_value, completion) => {
      pick.busy = false;
      suggestions = completion.values;
      render();
    },
    (_value, error) => {
      pick.busy = false;
      if (SidecarError.isCancellation(error)) {
        return;
      }
      if (!completionFailed) {
        completionFailed = true;
        ctx.log.info(
          `No completions for "${name}" of ${template.uriTemplate} (${template.server}): ${errorMessage(error)}`,
        );
      }
    },
  );
  const answer = runQuickPick<ValueItem, string | typeof BACK>(
    pick,
    {
      title: product(noIcons(`${displayName(template)}: ${template.uriTemplate}`)),
      step: index + 1,
      totalSteps: template.variables.length,
      placeholder: isList
        ? `Values of "${name}", separated by commas (type any values, or choose a suggestion)`
        : `Value of "${name}" (type any value, or choose a suggestion)`,
      ignoreFocusOut: true,
      buttons: index > 0 ? [vscode.QuickInputButtons.Back] : [],
      value: initial,
      items: argumentChoices(initial, suggestions),
      busy: true,
    },
    {
      accept: () => pick.selectedItems[0]?.value ?? pick.activeItems[0]?.value ?? pick.value,
      button: (button) => (button === vscode.QuickInputButtons.Back ? BACK : KEEP_OPEN),
      valueChanged: (value) => {
        render();
        pick.busy = true;
        query.update(value);
      },
      closed: () => query.dispose(),
    },
  );
  query.update(initial);
  return answer;
}
