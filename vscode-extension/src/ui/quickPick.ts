// The one way the extension shows a QuickPick and waits for its answer: the resource picker, the template
// variables and the consent folder lists all go through runQuickPick (or pickOne / pickMany on top of it). It
// loads no `vscode` at run time: the caller creates the picker, so a fake one drives it in unit tests.
import type * as vscode from "vscode";

/** The cancellation side of a token (a request's time-out); vscode's and vscode-jsonrpc's tokens both fit. */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

/** A token that is never cancelled, for pickers that only the user closes. */
export const NEVER_CANCELLED: Cancellation = {
  isCancellationRequested: false,
  onCancellationRequested: () => ({ dispose: () => undefined }),
};

/** What an accept or button handler returns to leave the picker open (nothing to answer with yet). */
export const KEEP_OPEN: unique symbol = Symbol("keep the quick pick open");

/** A handler's outcome: the answer, which closes the picker, or {@link KEEP_OPEN}. */
export type Outcome<R> = R | typeof KEEP_OPEN;

/** The parts of `vscode.QuickPick` that {@link runQuickPick} drives; the real one fits, and so does a fake. */
export type QuickPickLike<T extends vscode.QuickPickItem> = Pick<
  vscode.QuickPick<T>,
  | "items"
  | "activeItems"
  | "selectedItems"
  | "value"
  | "title"
  | "placeholder"
  | "step"
  | "totalSteps"
  | "buttons"
  | "busy"
  | "canSelectMany"
  | "matchOnDescription"
  | "matchOnDetail"
  | "keepScrollPosition"
  | "ignoreFocusOut"
  | "onDidAccept"
  | "onDidChangeSelection"
  | "onDidHide"
  | "onDidChangeValue"
  | "onDidTriggerButton"
  | "show"
  | "dispose"
>;

/** How the picker looks when it opens; the caller may change items, busy, placeholder … while it is open. */
export interface QuickPickOptions<T extends vscode.QuickPickItem> {
  readonly title?: string;
  readonly placeholder?: string;
  readonly items?: readonly T[];
  /** With {@link canSelectMany}: the items checked when it opens. */
  readonly selectedItems?: readonly T[];
  /** The filter text it opens with. */
  readonly value?: string;
  readonly step?: number;
  readonly totalSteps?: number;
  /** Title-bar buttons (Back …); presses go to {@link QuickPickHandlers.button}. */
  readonly buttons?: readonly vscode.QuickInputButton[];
  readonly busy?: boolean;
  readonly canSelectMany?: boolean;
  readonly matchOnDescription?: boolean;
  readonly matchOnDetail?: boolean;
  readonly keepScrollPosition?: boolean;
  /** Stay open when the focus moves elsewhere (a question that must be answered or dismissed). */
  readonly ignoreFocusOut?: boolean;
}

/** What the picker does while open; every handler runs only until it closes. */
export interface QuickPickHandlers<R, T extends vscode.QuickPickItem = vscode.QuickPickItem> {
  /** The user accepted (Enter, or a click): the answer, or {@link KEEP_OPEN}. */
  accept(): Outcome<R>;
  /** A title-bar button was pressed: the answer, or {@link KEEP_OPEN} (also when there is no handler). */
  button?(button: vscode.QuickInputButton): Outcome<R>;
  /** The filter text changed. */
  valueChanged?(value: string): void;
  /** The selection changed (with `canSelectMany`: an item was checked or unchecked). */
  selectionChanged?(items: readonly T[]): void;
  /** The picker closes (answered, dismissed or cancelled), once, just before it is disposed. */
  closed?(): void;
}

/**
 * Show `pick`, set up as `options` say, and resolve to the answer of {@link QuickPickHandlers.accept} or
 * {@link QuickPickHandlers.button}; `undefined` when it is hidden (Escape, or the focus moved elsewhere unless
 * `ignoreFocusOut`) or `token` is cancelled. The picker belongs to this call from now on: it is always disposed
 * when it closes, which also hides it. A token cancelled already resolves at once without showing anything.
 */
export function runQuickPick<T extends vscode.QuickPickItem, R>(
  pick: QuickPickLike<T>,
  options: QuickPickOptions<T>,
  handlers: QuickPickHandlers<R, T>,
  token: Cancellation = NEVER_CANCELLED,
): Promise<R | undefined> {
  return new Promise<R | undefined>((resolve) => {
    let settled = false;
    let listeners: { dispose(): void }[] = [];
    const finish = (answer: R | undefined): void => {
      if (settled) {
        return;
      }
      settled = true;
      for (const listener of listeners.splice(0)) {
        listener.dispose();
      }
      handlers.closed?.();
      pick.dispose();
      resolve(answer);
    };
    const settle = (outcome: Outcome<R>): void => {
      if (outcome !== KEEP_OPEN) {
        finish(outcome);
      }
    };
    if (token.isCancellationRequested) {
      finish(undefined);
      return;
    }
    apply(pick, options);
    listeners = [
      pick.onDidAccept(() => settle(handlers.accept())),
      pick.onDidTriggerButton((button) => settle(handlers.button?.(button) ?? KEEP_OPEN)),
      pick.onDidChangeValue((value) => handlers.valueChanged?.(value)),
      pick.onDidChangeSelection((items) => handlers.selectionChanged?.(items)),
      pick.onDidHide(() => finish(undefined)),
      token.onCancellationRequested(() => finish(undefined)),
    ];
    pick.show();
  });
}

/**
 * One item of a single-select picker: the one accepted, `undefined` when dismissed or cancelled (or accepted
 * while the list is empty).
 */
export function pickOne<T extends vscode.QuickPickItem>(
  pick: QuickPickLike<T>,
  options: QuickPickOptions<T> & { readonly canSelectMany?: false },
  token?: Cancellation,
): Promise<T | undefined> {
  return runQuickPick(pick, options, { accept: () => acceptedItem(pick) }, token);
}

/**
 * The checked items of a multi-select picker when accepted (maybe none), `undefined` when dismissed or cancelled.
 *
 * `focusFilter` gives the keyboard focus back to the picker's filter box (in VS Code, the command
 * `workbench.action.focusQuickOpen`); it runs after each change of the checks. A click on a check box leaves the
 * focus on that box, and VS Code's box takes Enter as "toggle me" (it never reaches the picker's accept), so
 * Enter right after a click would uncheck the box and keep the list open. With the focus in the filter box,
 * Enter accepts the list as checked. Only the focus moves: the items and their checks are never written back,
 * so no click can be undone by a redraw racing it.
 */
export function pickMany<T extends vscode.QuickPickItem>(
  pick: QuickPickLike<T>,
  options: Omit<QuickPickOptions<T>, "canSelectMany">,
  token?: Cancellation,
  focusFilter?: () => void,
): Promise<readonly T[] | undefined> {
  return runQuickPick(
    pick,
    { ...options, canSelectMany: true },
    { accept: () => pick.selectedItems, selectionChanged: () => focusFilter?.() },
    token,
  );
}

/** The item a single-select picker was accepted on: the selected one, else the highlighted one. */
export function acceptedItem<T extends vscode.QuickPickItem>(
  pick: Pick<QuickPickLike<T>, "selectedItems" | "activeItems">,
): T | undefined {
  return pick.selectedItems[0] ?? pick.activeItems[0];
}

/** Set the options that are given, on a picker fresh from `createQuickPick`; checked items after the items. */
function apply<T extends vscode.QuickPickItem>(pick: QuickPickLike<T>, options: QuickPickOptions<T>): void {
  pick.ignoreFocusOut = options.ignoreFocusOut ?? pick.ignoreFocusOut;
  pick.canSelectMany = options.canSelectMany ?? pick.canSelectMany;
  pick.title = options.title ?? pick.title;
  pick.placeholder = options.placeholder ?? pick.placeholder;
  pick.step = options.step ?? pick.step;
  pick.totalSteps = options.totalSteps ?? pick.totalSteps;
  pick.buttons = options.buttons ?? pick.buttons;
  pick.matchOnDescription = options.matchOnDescription ?? pick.matchOnDescription;
  pick.matchOnDetail = options.matchOnDetail ?? pick.matchOnDetail;
  pick.keepScrollPosition = options.keepScrollPosition ?? pick.keepScrollPosition;
  pick.value = options.value ?? pick.value;
  pick.items = options.items ?? pick.items;
  pick.selectedItems = options.selectedItems ?? pick.selectedItems;
  pick.busy = options.busy ?? pick.busy;
}
