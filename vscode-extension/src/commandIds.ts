// The id of every command the extension registers, as package.json declares it in `contributes.commands`. A leaf:
// it imports nothing, so a view that runs or names a command (status, pickers, the tree) needs no import of the
// command table (commands.ts), which imports the views' types in turn.

/** Every command id of the extension; commands.ts has one factory for each. */
export const COMMAND_IDS = [
  "hostBridge.pickResource",
  "hostBridge.insertResource",
  "hostBridge.manageSharedFolders",
  "hostBridge.showStatus",
  "hostBridge.showLog",
  "hostBridge.restartSidecar",
  "hostBridge.refreshResources",
  "hostBridge.saveResourceAs",
  "hostBridge.openResource",
  "hostBridge.loadMore",
  "hostBridge.handOverServers",
  "hostBridge.addServer",
] as const;

/** The id of a command of the extension; a string naming a command anywhere in the code has this type. */
export type CommandId = (typeof COMMAND_IDS)[number];
