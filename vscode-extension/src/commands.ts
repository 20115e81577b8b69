// Every command the extension registers, in one table: the id (commandIds.ts, as package.json declares it in
// `contributes.commands`) and a factory that makes its callback from the features. activate() registers the
// whole table with registerCommands; test/unit/commands.test.ts checks it against package.json. This module
// loads no feature and no `vscode` at run time (type imports only), so that test can read the table; the views
// name commands through commandIds.ts, never through this module.
import { COMMAND_IDS, type CommandId } from "./commandIds";
import type { Consent } from "./consent/consent";
import type { Ctx } from "./ctx";
import type { ResourceDocuments } from "./resources/documents";
import type { ResourcePickers } from "./picker/pickers";
import type { StatusView } from "./status/status";
import type { ResourcesView } from "./tree/tree";
import type { HandOver } from "./vscodeMcp/handOver";

/** What a command's factory gets: the context and every feature, as activate() made them. */
export interface Features {
  readonly ctx: Ctx;
  readonly consent: Consent;
  readonly documents: ResourceDocuments;
  readonly handOver: HandOver;
  readonly pickers: ResourcePickers;
  readonly status: StatusView;
  readonly tree: ResourcesView;
}

/** A command's callback; its arguments come from whoever runs it (a menu, a tree item, another command). */
export type Command = (...args: unknown[]) => unknown;

/** Makes a command's callback from the features. */
export type CommandFactory = (features: Features) => Command;

/** Every command of the extension, by id. */
export const commands: Readonly<Record<CommandId, CommandFactory>> = {
  "hostBridge.pickResource": (features) => () => features.pickers.pick(),
  "hostBridge.insertResource": (features) => () => features.pickers.insert(),
  "hostBridge.manageSharedFolders": (features) => (serverId?: unknown) =>
    features.consent.manageSharedFolders(serverId),
  "hostBridge.showStatus": (features) => () => features.status.show(),
  "hostBridge.showLog": (features) => () => features.ctx.log.show(),
  "hostBridge.restartSidecar": (features) => () => features.status.restartSidecar(),
  "hostBridge.refreshResources": (features) => () => features.tree.refresh(),
  "hostBridge.saveResourceAs": (features) => (argument?: unknown) => features.documents.saveAs(argument),
  "hostBridge.openResource": (features) => (argument?: unknown) => features.documents.openArgument(argument),
  "hostBridge.loadMore": (features) => (server?: unknown) => features.tree.loadMore(server),
  "hostBridge.handOverServers": (features) => () => features.handOver.handOverAll(),
  "hostBridge.addServer": (features) => () => features.status.addServer(),
};

/** Register every command of the table through `register` (`vscode.commands.registerCommand`). */
export function registerCommands<D>(features: Features, register: (id: CommandId, callback: Command) => D): D[] {
  return COMMAND_IDS.map((id) => register(id, commands[id](features)));
}
