// Where the time of a window's start went, from the logs code-server and the extension write (each line has a
// local timestamp with milliseconds) and the page's own clock: every event as milliseconds since the page
// started loading (`performance.timeOrigin`, the same machine clock).
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import type { CodeServer } from "./codeServer";

/** One event of the start, `at` milliseconds after the page started loading (undefined: not found in the logs). */
export interface TimelineEvent {
  readonly name: string;
  readonly at: number | undefined;
}

/** `2026-11-24 13:57:46.555 [info] …` → epoch milliseconds (the logs write local time). */
function lineTime(line: string): number | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3}) /.exec(line);
  if (match === null) {
    return undefined;
  }
  const [year, month, day, hours, minutes, seconds, ms] = match.slice(1).map(Number) as number[];
  return new Date(year ?? 0, (month ?? 1) - 1, day, hours, minutes, seconds, ms).getTime();
}

/** The lines of every `name` log file under the user data folder's log sessions (`logs/<session>/…`). */
function logLines(server: CodeServer, relative: (session: string) => string[]): string[] {
  const logs = path.join(server.userDataDir, "logs");
  if (!existsSync(logs)) {
    return [];
  }
  const lines: string[] = [];
  for (const session of readdirSync(logs).sort()) {
    for (const file of relative(path.join(logs, session))) {
      if (existsSync(file)) {
        lines.push(...readFileSync(file, "utf8").split("\n"));
      }
    }
  }
  return lines;
}

function exthostLogs(session: string): string[] {
  return readdirSync(session)
    .filter((name) => name.startsWith("exthost"))
    .sort()
    .map((name) => path.join(session, name, "remoteexthost.log"));
}

/**
 * The first start of a window, phase by phase: code-server starting the extension host, the extension's
 * activation (and the other eager extensions'), the sidecar started (after its interpreter was chosen and, for
 * the universal package, its environment installed), its `initialize` answered, the MCP server's first line, the
 * consent question sent to the editor; `dialogAt` is when the test saw the dialog.
 */
export function startTimeline(server: CodeServer, pageOrigin: number, dialogAt: number): TimelineEvent[] {
  const agent = logLines(server, (session) => [path.join(session, "remoteagent.log")]);
  const exthost = logLines(server, exthostLogs);
  const extension = server.extensionLog().split("\n");
  const first = (lines: string[], pattern: RegExp): number | undefined => {
    const line = lines.find((candidate) => pattern.test(candidate));
    const time = line === undefined ? undefined : lineTime(line);
    return time === undefined ? undefined : time - pageOrigin;
  };
  // The extension's log is written in batches at first (lines logged before its file is ready share the time it
  // was flushed), so the sidecar's start is the time of the line that says how long ago it was.
  const running = /\[info\] the sidecar runs \(initialize answered (\d+) ms after it was started\)/;
  const runs = first(extension, running);
  const answeredAfter = Number(running.exec(extension.find((line) => running.test(line)) ?? "")?.[1]);
  const spawned = runs === undefined || Number.isNaN(answeredAfter) ? undefined : runs - answeredAfter;
  return [
    { name: "code-server starts the extension host", at: first(agent, /\[ExtensionHostConnection\] Starting extension host process/) },
    { name: "the extension host runs", at: first(exthost, /Extension host with pid \d+ started/) },
    { name: "the first extension activates", at: first(exthost, /_doActivateExtension /) },
    { name: "the eager extensions (`*`, workspaceContains) are active", at: first(exthost, /Eager extensions activated/) },
    { name: "the extension activates", at: first(exthost, /_doActivateExtension host-bridge\.host-bridge\b/) },
    { name: "the sidecar is started", at: spawned },
    { name: "the sidecar answered initialize", at: runs },
    { name: "the MCP server's first stderr line", at: first(extension, /\[info\] \[fs\] /) },
    { name: "the consent question reaches the extension", at: first(extension, /\[info\] consent: asking about /) },
    { name: "the dialog is shown", at: dialogAt },
  ];
}

/** The timeline in the order things happened, as lines `  12.30 s  (+1.20 s)  the extension activates`. */
export function formatTimeline(events: readonly TimelineEvent[]): string {
  let previous = 0;
  return [...events]
    .sort((a, b) => (a.at ?? Infinity) - (b.at ?? Infinity))
    .map(({ name, at }) => {
      if (at === undefined) {
        return `     ?              ${name} (not in the logs)`;
      }
      const step = at - previous;
      previous = at;
      return `${(at / 1000).toFixed(2).padStart(7)} s  (+${(step / 1000).toFixed(2)} s)  ${name}`;
    })
    .join("\n");
}
