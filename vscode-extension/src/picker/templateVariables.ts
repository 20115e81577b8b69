// Which variables of an RFC 6570 URI template take a list: those with the explode modifier (`{?tags*}`,
// `{/path*}`). The user types such a value as several items separated by commas; every other variable is one string
// (a comma in it is sent as it is and the sidecar's expander encodes it).

/** One expression `{…}`: its operator (if any) and its variable specifications. */
const EXPRESSION = /\{[+#./;?&=,!@|]?([^{}]*)\}/g;
/** A variable specification: the name, then `*` (explode) or `:N` (prefix). */
const VARSPEC = /^\s*([A-Za-z0-9_.%]+)\s*(\*|:\d+)?\s*$/;

/** The names of the variables in `uriTemplate` that carry the explode modifier. */
export function listVariables(uriTemplate: string): ReadonlySet<string> {
  const lists = new Set<string>();
  for (const match of uriTemplate.matchAll(EXPRESSION)) {
    for (const spec of (match[1] ?? "").split(",")) {
      const parsed = VARSPEC.exec(spec);
      if (parsed?.[2] === "*" && parsed[1] !== undefined) {
        lists.add(parsed[1]);
      }
    }
  }
  return lists;
}

/** The items of a list value as typed: split at commas, each trimmed, empty ones dropped. */
export function listItems(typed: string): string[] {
  return typed
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** The arguments to send: what was typed for each variable, as a list of items where the variable takes one. */
export function templateArguments(
  uriTemplate: string,
  typed: Readonly<Record<string, string>>,
): Record<string, string | string[]> {
  const lists = listVariables(uriTemplate);
  const result: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(typed)) {
    result[name] = lists.has(name) ? listItems(value) : value;
  }
  return result;
}

/** A list value being typed: the items already finished (through the last comma) and the one being typed. */
export function lastItem(typed: string): { head: string; last: string } {
  const comma = typed.lastIndexOf(",");
  return comma < 0
    ? { head: "", last: typed }
    : { head: typed.slice(0, comma + 1), last: typed.slice(comma + 1).trimStart() };
}
