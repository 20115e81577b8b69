import type * as vscode from "vscode";
import { describe, expect, it } from "vitest";
import {
  type Cancellation,
  KEEP_OPEN,
  type QuickPickLike,
  acceptedItem,
  pickMany,
  pickOne,
  runQuickPick,
} from "../../../src/ui/quickPick";

type Listener<E> = (event: E) => unknown;

/** A minimal event source, standing in for `vscode.EventEmitter`. */
class Emitter<E> {
  readonly listeners = new Set<Listener<E>>();
  readonly event = (listener: Listener<E>): { dispose(): void } => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(event: E): void {
    for (const listener of [...this.listeners]) {
      listener(event);
    }
  }
}

/** A QuickPick that records what is done to it; the tests play the user. */
class FakeQuickPick<T extends vscode.QuickPickItem> implements QuickPickLike<T> {
  items: readonly T[] = [];
  activeItems: readonly T[] = [];
  value = "";
  title: string | undefined;
  placeholder: string | undefined;
  step: number | undefined;
  totalSteps: number | undefined;
  buttons: readonly vscode.QuickInputButton[] = [];
  busy = false;
  canSelectMany = false;
  matchOnDescription = false;
  matchOnDetail = false;
  keepScrollPosition?: boolean;
  ignoreFocusOut = false;
  shown = false;
  disposed = false;
  /** What `items` held when `selectedItems` was last set: a real picker drops checks of items it does not have. */
  itemsWhenChecked: readonly T[] | undefined;
  private checked: readonly T[] = [];

  readonly accepted = new Emitter<void>();
  readonly hidden = new Emitter<void>();
  readonly valueChanged = new Emitter<string>();
  readonly buttonTriggered = new Emitter<vscode.QuickInputButton>();
  readonly selectionChanged = new Emitter<readonly T[]>();
  /** How many times `items` or `selectedItems` was set. */
  writes = 0;
  readonly onDidAccept = this.accepted.event;
  readonly onDidChangeSelection = this.selectionChanged.event;
  readonly onDidHide = this.hidden.event;
  readonly onDidChangeValue = this.valueChanged.event;
  readonly onDidTriggerButton = this.buttonTriggered.event;

  get selectedItems(): readonly T[] {
    return this.checked;
  }

  set selectedItems(items: readonly T[]) {
    this.writes += 1;
    this.itemsWhenChecked = this.items;
    this.checked = items;
  }

  show(): void {
    this.shown = true;
  }

  dispose(): void {
    this.disposed = true;
  }

  /** Listeners still attached, over all events. */
  get listenerCount(): number {
    return [this.accepted, this.hidden, this.valueChanged, this.buttonTriggered, this.selectionChanged].reduce(
      (count, emitter) => count + emitter.listeners.size,
      0,
    );
  }

  type(value: string): void {
    this.value = value;
    this.valueChanged.fire(value);
  }

  accept(): void {
    this.accepted.fire();
  }

  /** The user checks or unchecks an item (a click on its box): the picker reports the checks. */
  check(items: readonly T[]): void {
    this.checked = items;
    this.selectionChanged.fire(items);
  }
}

/** A token the test cancels. */
class Token implements Cancellation {
  isCancellationRequested = false;
  private readonly cancelled = new Emitter<void>();

  onCancellationRequested(listener: () => void): { dispose(): void } {
    return this.cancelled.event(listener);
  }

  cancel(): void {
    this.isCancellationRequested = true;
    this.cancelled.fire();
  }
}

const BACK = { iconPath: { id: "arrow-left" } } as vscode.QuickInputButton;
const a = { label: "a" };
const b = { label: "b" };
const c = { label: "c" };

describe("runQuickPick", () => {
  it("sets up the picker as the options say, then shows it", () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    const options = {
      title: "Title",
      placeholder: "Type",
      items: [a, b],
      value: "x",
      step: 2,
      totalSteps: 3,
      buttons: [BACK],
      busy: true,
      matchOnDescription: true,
      matchOnDetail: true,
      keepScrollPosition: true,
      ignoreFocusOut: true,
    };
    void runQuickPick(pick, options, { accept: () => KEEP_OPEN });
    expect(pick).toMatchObject({ ...options, canSelectMany: false, shown: true, disposed: false });
  });

  it("resolves to what accept answers, then disposes the picker and its listeners once", async () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    let closed = 0;
    const answer = runQuickPick(pick, { items: [a] }, { accept: () => "yes", closed: () => (closed += 1) });
    pick.accept();
    pick.hidden.fire();
    await expect(answer).resolves.toBe("yes");
    expect(pick.disposed).toBe(true);
    expect(pick.listenerCount).toBe(0);
    expect(closed).toBe(1);
  });

  it("stays open while accept answers KEEP_OPEN", async () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    let accepts = 0;
    const answer = runQuickPick(pick, {}, { accept: () => (++accepts < 2 ? KEEP_OPEN : accepts) });
    pick.accept();
    expect(pick.disposed).toBe(false);
    pick.accept();
    await expect(answer).resolves.toBe(2);
  });

  it("resolves undefined when hidden (Escape), and calls closed", async () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    let closed = false;
    const answer = runQuickPick(pick, {}, { accept: () => "never", closed: () => (closed = true) });
    pick.hidden.fire();
    await expect(answer).resolves.toBeUndefined();
    expect(closed).toBe(true);
    expect(pick.disposed).toBe(true);
  });

  it("answers a title-bar button through its handler, and ignores buttons without one", async () => {
    const ignored = new FakeQuickPick<vscode.QuickPickItem>();
    void runQuickPick(ignored, { buttons: [BACK] }, { accept: () => "accepted" });
    ignored.buttonTriggered.fire(BACK);
    expect(ignored.disposed).toBe(false);

    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    const answer = runQuickPick<vscode.QuickPickItem, string>(
      pick,
      { buttons: [BACK] },
      { accept: () => "accepted", button: (button) => (button === BACK ? "back" : KEEP_OPEN) },
    );
    pick.buttonTriggered.fire(BACK);
    await expect(answer).resolves.toBe("back");
  });

  it("passes every change of the filter text while open", () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    const typed: string[] = [];
    void runQuickPick(pick, {}, { accept: () => KEEP_OPEN, valueChanged: (value) => typed.push(value) });
    pick.type("a");
    pick.type("ab");
    pick.hidden.fire();
    pick.type("abc");
    expect(typed).toEqual(["a", "ab"]);
  });

  it("closes the picker when the token is cancelled", async () => {
    const token = new Token();
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    const answer = runQuickPick(pick, {}, { accept: () => "never" }, token);
    token.cancel();
    await expect(answer).resolves.toBeUndefined();
    expect(pick.disposed).toBe(true);
  });

  it("shows nothing for a token cancelled already", async () => {
    const token = new Token();
    token.cancel();
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    let closed = false;
    await expect(
      runQuickPick(pick, { items: [a] }, { accept: () => "never", closed: () => (closed = true) }, token),
    ).resolves.toBeUndefined();
    expect(pick.shown).toBe(false);
    expect(pick.disposed).toBe(true);
    expect(closed).toBe(true);
  });
});

describe("pickOne", () => {
  it("answers the selected item, else the highlighted one", async () => {
    const selected = new FakeQuickPick<vscode.QuickPickItem>();
    const first = pickOne(selected, { items: [a, b] });
    selected.activeItems = [a];
    selected.selectedItems = [b];
    selected.accept();
    await expect(first).resolves.toBe(b);

    const active = new FakeQuickPick<vscode.QuickPickItem>();
    const second = pickOne(active, { items: [a, b] });
    active.activeItems = [a];
    active.accept();
    await expect(second).resolves.toBe(a);
  });

  it("answers undefined when accepted on an empty list", async () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    const answer = pickOne(pick, { items: [] });
    pick.accept();
    await expect(answer).resolves.toBeUndefined();
    expect(pick.disposed).toBe(true);
  });
});

describe("pickMany", () => {
  it("opens multi-select with the given items checked, and answers the checked ones", async () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    const answer = pickMany(pick, { items: [a, b, c], selectedItems: [b] });
    expect(pick.canSelectMany).toBe(true);
    expect(pick.itemsWhenChecked).toEqual([a, b, c]);
    expect(pick.selectedItems).toEqual([b]);
    pick.selectedItems = [a, c];
    pick.accept();
    await expect(answer).resolves.toEqual([a, c]);
  });

  it("gives the focus back to the filter box after each click on a box, and never rewrites the checks", async () => {
    const pick = new FakeQuickPick<vscode.QuickPickItem>();
    let refocused = 0;
    const answer = pickMany(pick, { items: [a, b, c] }, undefined, () => (refocused += 1));
    const writes = pick.writes;
    pick.check([b]);
    expect(refocused).toBe(1);
    pick.check([b, c]);
    pick.check([c]);
    expect(refocused).toBe(3);
    // Nothing was written back to the picker, so no write can race the next click and undo it.
    expect(pick.writes).toBe(writes);
    pick.accept();
    await expect(answer).resolves.toEqual([c]);
    pick.check([a]);
    expect(refocused, "no focus moves once the list is answered").toBe(3);
    expect(pick.listenerCount).toBe(0);
  });

  it("answers an empty list when nothing is checked, and undefined when dismissed", async () => {
    const none = new FakeQuickPick<vscode.QuickPickItem>();
    const empty = pickMany(none, { items: [a] });
    none.accept();
    await expect(empty).resolves.toEqual([]);

    const dismissed = new FakeQuickPick<vscode.QuickPickItem>();
    const answer = pickMany(dismissed, { items: [a], selectedItems: [a] });
    dismissed.hidden.fire();
    await expect(answer).resolves.toBeUndefined();
  });
});

describe("acceptedItem", () => {
  it("prefers the selected item to the highlighted one", () => {
    expect(acceptedItem({ selectedItems: [a], activeItems: [b] })).toBe(a);
    expect(acceptedItem({ selectedItems: [], activeItems: [b] })).toBe(b);
    expect(acceptedItem({ selectedItems: [], activeItems: [] })).toBeUndefined();
  });
});
