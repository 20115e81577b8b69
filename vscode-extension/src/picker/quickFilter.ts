// Which quick pick items a filter text keeps, as VS Code's quick pick decides it, for a picker that shows only some
// of its rows (resourcePicker.ts: a list too long to hand to the window whole is filtered here, and the window filters
// the matches again). VS Code keeps an item when its label, description or detail (with `matchOnDescription` and
// `matchOnDetail`) matches the trimmed filter in `matchesFuzzy` (vs/base/common/filters.ts, without separate
// substring matching): the filter as a case-insensitive pattern in which `*` stands for anything, else a prefix, a
// camel-case match or a contiguous substring, ignoring case. Icons (`$(name)`) are not part of the text matched.
//
// What this module keeps is a superset of that, ranked: an item that VS Code keeps is never lost (its rank is
// never `undefined`), and the ranks put VS Code's own matches first, so a picker that shows only the best ones shows
// those VS Code would.

/** The texts of a quick pick item that the filter looks at. */
export interface FilterTexts {
  readonly label: string;
  readonly description?: string;
  readonly detail?: string;
}

/**
 * How well an item matches, best first: the label matches as a pattern or substring (0), the description or
 * detail does (1), a field matches as camel case (2), or the filter is only a subsequence of the start of a field
 * (3), which VS Code's camel-case rule needs but does not ensure: kept in case this port is stricter than VS Code.
 */
export type MatchRank = 0 | 1 | 2 | 3;

/** `$(name)` as VS Code parses an icon in a label (a `\$(` is not one). */
const ICON = /(?<!\\)\$\([A-Za-z0-9-]+(?:~[A-Za-z]+)?\)/g;

/** The longest start of a field VS Code's camel-case rule looks at. */
const CAMEL_CASE_CHARS = 60;

/** One text of an item, worked out once for every filter to come. */
interface PreparedField {
  /** The text without icons. */
  readonly text: string;
  readonly lower: string;
  /** Whether the text is ASCII only: then ignoring case is lower-casing, and no pattern test is needed. */
  readonly ascii: boolean;
  /** Its start as the camel-case rule sees it: trimmed, at most 60 characters. */
  readonly start: string;
  readonly startLower: string;
  /** The ASCII letters and digits {@link startLower} holds, as bits ({@link charBits}). */
  readonly startBits: number;
  /** What the camel-case rule matches against (`null`: nothing), once asked. */
  camel?: string | null;
}

/** An item's label, description and detail, prepared ({@link prepareTexts}). */
export interface PreparedTexts {
  readonly label: PreparedField | undefined;
  readonly others: readonly PreparedField[];
}

function prepareField(raw: string | undefined): PreparedField | undefined {
  if (raw === undefined || raw === "") {
    return undefined;
  }
  const text = raw.includes("$(") ? raw.replace(ICON, "") : raw;
  const start = text.trim().slice(0, CAMEL_CASE_CHARS);
  const startLower = start.toLowerCase();
  return {
    text,
    lower: text.toLowerCase(),
    ascii: ASCII.test(text),
    start,
    startLower,
    startBits: charBits(startLower),
  };
}

const ASCII = /^[ -~\t\n\r]*$/;

/**
 * One bit per lower-case ASCII letter and per digit (several digits share one), set for each that `text` holds: a
 * word whose bits are not all in a text's is no subsequence of it, which saves looking.
 */
function charBits(text: string): number {
  let bits = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 97 && code <= 122) {
      bits |= 1 << (code - 97);
    } else if (code >= 48 && code <= 57) {
      bits |= 1 << (26 + (code % 6));
    }
  }
  return bits;
}

/** What {@link quickPickFilter}'s matchers look at: worked out once per item (keep it with the item). */
export function prepareTexts(item: FilterTexts): PreparedTexts {
  const others: PreparedField[] = [];
  for (const raw of [item.description, item.detail]) {
    const field = prepareField(raw);
    if (field !== undefined) {
      others.push(field);
    }
  }
  return { label: prepareField(item.label), others };
}

/** A matcher for `filter` (as typed); `undefined` when the filter is empty, which keeps everything. */
export function quickPickFilter(filter: string): ((item: PreparedTexts) => MatchRank | undefined) | undefined {
  const word = filter.trim();
  if (word === "") {
    return undefined;
  }
  const pattern = new RegExp(simplePattern(word), "i");
  const lower = word.toLowerCase();
  const bits = charBits(lower);
  // An ASCII word without `*` matches an ASCII text as a pattern exactly when it is a substring, ignoring case.
  const plainWord = ASCII.test(word) && !word.includes("*");
  const camelPattern = isCamelCasePattern(word);
  const exact = (field: PreparedField): boolean =>
    field.lower.includes(lower) || (!(plainWord && field.ascii) && pattern.test(field.text));
  const loose = (field: PreparedField): 2 | 3 | undefined => {
    if ((bits & field.startBits) !== bits || !isSubsequence(lower, field.startLower)) {
      return undefined;
    }
    if (camelPattern) {
      if (field.camel === undefined) {
        field.camel = camelCaseTarget(field.start) ?? null;
      }
      if (field.camel !== null && matchesCamelCase(lower, field.camel)) {
        return 2;
      }
    }
    return 3;
  };
  return (item) => {
    if (item.label !== undefined && exact(item.label)) {
      return 0;
    }
    if (item.others.some(exact)) {
      return 1;
    }
    let best: MatchRank | undefined;
    for (const field of item.label === undefined ? item.others : [item.label, ...item.others]) {
      const rank = loose(field);
      if (rank !== undefined && (best === undefined || rank < best)) {
        best = rank;
      }
    }
    return best;
  };
}

/** VS Code's `convertSimple2RegExpPattern`: regular expression characters escaped, `*` for anything. */
function simplePattern(word: string): string {
  return word.replace(/[-\\{}+?|^$.,[\]()#\s]/g, "\\$&").replace(/[*]/g, ".*");
}

function isSubsequence(word: string, text: string): boolean {
  let at = 0;
  for (const char of word) {
    at = text.indexOf(char, at);
    if (at === -1) {
      return false;
    }
    at += char.length;
  }
  return true;
}

// VS Code's camel-case rule (matchesCamelCase), for ASCII letters and digits as it is.

function isLower(code: number): boolean {
  return code >= 97 && code <= 122;
}

function isUpper(code: number): boolean {
  return code >= 65 && code <= 90;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isAlphanumeric(code: number): boolean {
  return isLower(code) || isUpper(code) || isDigit(code);
}

function isWhitespace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

/** Whether the filter looks like a camel-case pattern at all (few capitals, not too long). */
function isCamelCasePattern(word: string): boolean {
  let upper = 0;
  let lower = 0;
  let whitespace = 0;
  for (let index = 0; index < word.length; index += 1) {
    const code = word.charCodeAt(index);
    upper += isUpper(code) ? 1 : 0;
    lower += isLower(code) ? 1 : 0;
    whitespace += isWhitespace(code) ? 1 : 0;
  }
  if ((upper === 0 || lower === 0) && whitespace === 0) {
    return word.length <= 30;
  }
  return upper <= 5;
}

/**
 * What the camel-case rule matches `text` (trimmed, its first 60 characters) against: itself when it looks like a
 * camel-case word, lower-cased when it looks like an upper-case one, else nothing.
 */
function camelCaseTarget(text: string): string | undefined {
  if (text === "") {
    return undefined;
  }
  let upper = 0;
  let lower = 0;
  let alpha = 0;
  let digits = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    upper += isUpper(code) ? 1 : 0;
    lower += isLower(code) ? 1 : 0;
    alpha += isAlphanumeric(code) ? 1 : 0;
    digits += isDigit(code) ? 1 : 0;
  }
  const length = text.length;
  if (lower / length > 0.2 && upper / length < 0.8 && alpha / length > 0.6 && digits / length < 0.2) {
    return text;
  }
  return lower === 0 && upper / length > 0.6 ? text.toLowerCase() : undefined;
}

function nextAnchor(text: string, start: number): number {
  for (let index = start; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (isUpper(code) || isDigit(code) || (index > 0 && !isAlphanumeric(text.charCodeAt(index - 1)))) {
      return index;
    }
  }
  return text.length;
}

/**
 * Whether `word[i…]` matches `text` from `j` on: each next character at the next position or at a later anchor.
 * `memo` holds the answers already worked out (VS Code's recursion can take exponential time on hostile names).
 */
function camelCaseFrom(word: string, text: string, i: number, j: number, memo: Map<number, boolean>): boolean {
  if (i === word.length) {
    return true;
  }
  if (j === text.length || word[i] !== text[j]?.toLowerCase()) {
    return false;
  }
  const key = i * (text.length + 1) + j;
  const known = memo.get(key);
  if (known !== undefined) {
    return known;
  }
  let found = camelCaseFrom(word, text, i + 1, j + 1, memo);
  for (let next = nextAnchor(text, j + 1); !found && next < text.length; next = nextAnchor(text, next + 1)) {
    found = camelCaseFrom(word, text, i + 1, next, memo);
  }
  memo.set(key, found);
  return found;
}

/** VS Code's `matchesCamelCase(word, …)` for a lower-cased `word` and the target {@link camelCaseTarget} made. */
function matchesCamelCase(word: string, target: string): boolean {
  const memo = new Map<number, boolean>();
  for (let start = 0; start < target.length; start = nextAnchor(target, start + 1)) {
    if (camelCaseFrom(word, target, 0, start, memo)) {
      return true;
    }
  }
  return false;
}
