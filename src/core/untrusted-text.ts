/**
 * Agent text on its way to a caller (docs/agent-text.md). The caller is often a language model, and
 * everything the cloud agent writes is hostile: it must stay visibly the agent's, and carry nothing
 * a person cannot see. Every path that shows agent text — a reply, the task history, a question,
 * a progress note, a late reply, a failure report, a file name, a data part, in either A2A
 * dialect — goes through {@link cleanAgentText}, and agent prose through {@link fenceAgentText}.
 *
 * Cleaning removes what is invisible or reorders text (Unicode tag characters U+E0000–E007F,
 * zero-width characters outside emoji sequences, bidi marks, embeddings, overrides and isolates,
 * other format (`Cf`) and default-ignorable characters, C0 and C1 controls but tab and line feed,
 * variation selectors beyond one per character), turns U+2028, U+2029 and NEL into line breaks and
 * a lone surrogate into U+FFFD, and counts each class. Fencing wraps the cleaned text between a
 * start line (the agent's untrusted label and a per-reply nonce) and an end line with the same
 * nonce, after prefixing every line that imitates a fence line, a label or the bridge's own
 * sentences with {@link NEUTRALISED}. Both are linear in the text.
 */
import { randomBytes } from 'node:crypto';

/** What cleaning changed in one text, per class (docs/agent-text.md, "What is removed"). */
export interface TextChanges {
  /** Unicode tag characters (U+E0000–E007F): invisible ASCII a model still reads. */
  tag: number;
  /** ZWSP, ZWNJ, WJ, ZWNBSP/BOM, MVS, and ZWJ outside an emoji ZWJ sequence. */
  zeroWidth: number;
  /** LRM, RLM, ALM, LRE…RLO and PDF, LRI…PDI. */
  bidi: number;
  /** C0 controls but tab and line feed, DEL, C1 controls but NEL. */
  control: number;
  /** Other format (`Cf`) and default-ignorable characters (soft hyphen, Hangul fillers, invisible operators…). */
  format: number;
  /** Variation selectors after the first one on a character (a run of them can smuggle bytes). */
  variationSelector: number;
  /** Unpaired UTF-16 surrogates, replaced with U+FFFD. */
  loneSurrogate: number;
  /** U+2028, U+2029 and NEL (U+0085), turned into line feeds. */
  lineSeparator: number;
  /** Lines prefixed with {@link NEUTRALISED} (fenced text only). */
  neutralisedLines: number;
}

export function noChanges(): TextChanges {
  return { tag: 0, zeroWidth: 0, bidi: 0, control: 0, format: 0, variationSelector: 0, loneSurrogate: 0, lineSeparator: 0, neutralisedLines: 0 };
}

/** The sum of two change counts. */
export function addChanges(a: TextChanges, b: TextChanges): TextChanges {
  const out = noChanges();
  for (const k of Object.keys(out) as (keyof TextChanges)[]) out[k] = a[k] + b[k];
  return out;
}

/** Characters changed in all, neutralised lines left out. */
export function changedCount(c: TextChanges): number {
  return c.tag + c.zeroWidth + c.bidi + c.control + c.format + c.variationSelector + c.loneSurrogate + c.lineSeparator;
}

/** Every character cleaning looks at (tab and line feed among them, kept). */
const SUSPECT = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\p{Cs}]/gu;
const EXTENDED_PICTOGRAPHIC = /^\p{Extended_Pictographic}$/u;
const ZWJ = 0x200d;

function isVariationSelector(cp: number): boolean {
  return (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef);
}

function isBidi(cp: number): boolean {
  return cp === 0x200e || cp === 0x200f || cp === 0x061c || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

function isZeroWidth(cp: number): boolean {
  return cp === 0x200b || cp === 0x200c || cp === ZWJ || cp === 0x2060 || cp === 0xfeff || cp === 0x180e;
}

/** The code point that ends just before `at` (a surrogate pair counts as one), or -1. */
function codePointBefore(s: string, at: number): { cp: number; start: number } {
  if (at <= 0) return { cp: -1, start: 0 };
  const low = s.charCodeAt(at - 1);
  if (low >= 0xdc00 && low <= 0xdfff && at >= 2) {
    const high = s.charCodeAt(at - 2);
    if (high >= 0xd800 && high <= 0xdbff) return { cp: s.codePointAt(at - 2)!, start: at - 2 };
  }
  return { cp: low, start: at - 1 };
}

function pictographic(cp: number): boolean {
  return cp >= 0 && EXTENDED_PICTOGRAPHIC.test(String.fromCodePoint(cp));
}

/**
 * A ZWJ between two emoji (the one before may carry VS16 or a skin-tone modifier): 👩🏽‍💻, 🏳️‍🌈.
 * Unicode TS #51 §1.4.9 (emoji ZWJ sequences).
 */
function joinsEmoji(s: string, at: number): boolean {
  let before = codePointBefore(s, at);
  if (before.cp === 0xfe0f || (before.cp >= 0x1f3fb && before.cp <= 0x1f3ff)) before = codePointBefore(s, before.start);
  const after = s.codePointAt(at + 1) ?? -1;
  return pictographic(before.cp) && pictographic(after);
}

/**
 * Cleans one agent text (see the module comment). CR LF and lone CR become LF first.
 * @returns the cleaned text and what was changed
 */
export function cleanAgentText(s: string): { text: string; changes: TextChanges } {
  const changes = noChanges();
  const text = s.replace(/\r\n?/g, '\n').replace(SUSPECT, (c: string, at: number, whole: string) => {
    const cp = c.codePointAt(0)!;
    if (cp === 0x09 || cp === 0x0a) return c;
    if (cp === 0x2028 || cp === 0x2029 || cp === 0x85) {
      changes.lineSeparator++;
      return '\n';
    }
    if (cp >= 0xe0000 && cp <= 0xe007f) changes.tag++;
    else if (c.length === 1 && cp >= 0xd800 && cp <= 0xdfff) {
      changes.loneSurrogate++;
      return '\uFFFD';
    } else if (cp < 0xa0) changes.control++;
    else if (isBidi(cp)) changes.bidi++;
    else if (cp === ZWJ && joinsEmoji(whole, at)) return c;
    else if (isZeroWidth(cp)) changes.zeroWidth++;
    else if (isVariationSelector(cp)) {
      const before = codePointBefore(whole, at).cp;
      if (before >= 0 && !isVariationSelector(before) && !SUSPECT_ONE.test(String.fromCodePoint(before))) return c;
      changes.variationSelector++;
    } else changes.format++;
    return '';
  });
  return { text, changes };
}

const SUSPECT_ONE = new RegExp(`^${SUSPECT.source}$`, 'u');

/** The visible prefix of an agent line that imitates a fence line, a label or the bridge. */
export const NEUTRALISED = '(neutralised) ';

/** The words of the fence lines (docs/agent-text.md, "The fence"). */
export const FENCE_BEGIN = 'BEGIN-AGENT-TEXT';
export const FENCE_END = 'END-AGENT-TEXT';

/**
 * How the bridge's own sentences begin (src/core/status-text.ts, src/core/parts.ts, the notes of
 * src/core/bridge.ts), lower case: an agent line that begins the same way is neutralised.
 * test/unit/core/status-text.test.ts checks that every sentence the bridge writes begins so.
 */
export const BRIDGE_OPENERS: readonly string[] = [
  'the webhook to ',
  'next attempt at',
  'the job is ',
  'mailbox last checked',
  'the mailbox ',
  'the next check',
  'the next call',
  'a reply for this task',
  'replies for this task',
  'deadline ',
  'call again with context_id',
  'answer on context_id',
  'failed:',
  'canceled:',
  'rejected:',
  'your message was not sent',
  'this call was a status check',
  'send your message again',
  'a late reply',
  'this reply arrived',
  'there is no task on context_id',
  'the cloud agent',
  'it shows the first',
  'its report is in',
  'the bridge',
  'a2a-mailbridge',
  // The mark itself ({@link NEUTRALISED}, its parenthesis taken as dressing): an agent line that
  // begins with it would look marked by the bridge while imitating nothing else.
  'neutralised)',
];

const FENCE_LIKE = /(?:begin|end)[\s_\-.:]*agent[\s_\-.:]*text/;
const LABEL_LIKE = /\[\s*\/?\s*(?:un)?trusted\b/;
/**
 * Leading characters a line may dress an imitation in: spaces, quote marks (• · “ ” ‘ ’ « »,
 * written as escapes: one character outside ASCII in the code makes V8 hold the whole bundle's
 * source at two bytes a character, scripts/build.ts), Markdown, parentheses, list numbers.
 */
const DRESSING = /^[\s>*_#`|~\-+=\u2022\u00b7([{'"\u201c\u201d\u2018\u2019\u00ab\u00bb]*(?:\d+[.)]\s+)?/;
/** `3 replies for this task…`, `2 lines after the answer…`: a count before the opener. */
const COUNTED = /^\d[\d,]*\s+/;

/**
 * A line as {@link imitates} compares it: NFKC (a fullwidth bracket U+FF3B reads as `[`), combining
 * marks dropped (`T` with U+0335 over it reads as `T`), every run of white space one space (`The  job`,
 * `The<tab>job`: a renderer and a model read them as one), lower case. Linear in the line.
 */
function matchForm(s: string): string {
  return s.normalize('NFKD').replace(/\p{M}/gu, '').normalize('NFKC').replace(/\s+/g, ' ').toLowerCase();
}

/** Whether an agent line imitates a fence line, a label (ours or `labelKey`, in {@link matchForm}), or a bridge sentence. */
function imitates(line: string, labelKey: string): boolean {
  const n = matchForm(line);
  if (FENCE_LIKE.test(n) || LABEL_LIKE.test(n) || (labelKey !== '' && n.includes(labelKey))) return true;
  const body = n.replace(DRESSING, '');
  const opened = (t: string): boolean => BRIDGE_OPENERS.some((o) => t.startsWith(o));
  return opened(body) || opened(body.replace(COUNTED, ''));
}

/** The fence of one reply (docs/agent-text.md): its start line (label and nonce) and end line. */
export function fenceLines(label: string, nonce: string): { start: string; end: string } {
  const oneLine = label.replace(/[\r\n]+/g, ' ').trim();
  return { start: `${oneLine} ${FENCE_BEGIN} ${nonce}`, end: `${FENCE_END} ${nonce}` };
}

/** A fresh fence nonce: 64 bits from the CSPRNG as 16 lowercase hex digits. */
export function newFenceNonce(): string {
  return randomBytes(8).toString('hex');
}

/**
 * Agent prose as a caller sees it: cleaned ({@link cleanAgentText}), every line that imitates a
 * fence line, a label or a bridge sentence prefixed with {@link NEUTRALISED}, between the fence
 * lines of `fence` (docs/agent-text.md, "The fence").
 */
export function fenceAgentText(s: string, fence: { label: string; nonce: string }): { text: string; changes: TextChanges } {
  const { text, changes } = cleanAgentText(s);
  const labelKey = matchForm(fence.label).trim();
  const lines = text.split('\n').map((line) => {
    if (!imitates(line, labelKey)) return line;
    changes.neutralisedLines++;
    return NEUTRALISED + line;
  });
  const { start, end } = fenceLines(fence.label, fence.nonce);
  return { text: `${start}\n${lines.join('\n')}\n${end}`, changes };
}

/** Longest file name kept, in UTF-16 code units (a common file system limit is 255 bytes). */
const MAX_FILENAME = 255;

/**
 * An attachment's file name as a caller may use it: cleaned, line breaks and tabs as spaces, path
 * separators (`/`, `\`) as `_`, at most {@link MAX_FILENAME} characters; null when nothing is left.
 */
export function cleanFilename(s: string): { filename: string | null; changes: TextChanges; pathSeparators: number } {
  const { text, changes } = cleanAgentText(s);
  let pathSeparators = 0;
  const flat = text
    .replace(/[\n\t]/g, ' ')
    .replace(/[/\\]/g, () => {
      pathSeparators++;
      return '_';
    })
    .trim();
  const capped = flat.length > MAX_FILENAME ? flat.slice(0, MAX_FILENAME) : flat;
  return { filename: capped === '' ? null : capped, changes, pathSeparators };
}

/**
 * A JSON value from the agent with every string (member names included) cleaned. Walks without
 * recursion; members are defined, not assigned, so a `__proto__` member stays a member.
 */
export function cleanAgentData(value: unknown): { data: unknown; changes: TextChanges } {
  let changes = noChanges();
  const clean = (s: string): string => {
    const r = cleanAgentText(s);
    changes = addChanges(changes, r.changes);
    return r.text;
  };
  const copy = (v: unknown): unknown => (typeof v === 'string' ? clean(v) : typeof v === 'object' && v !== null ? (Array.isArray(v) ? [] : {}) : v);
  const root = copy(value);
  const stack: [unknown, unknown][] = [[value, root]];
  while (stack.length) {
    const [from, to] = stack.pop()!;
    if (typeof from !== 'object' || from === null) continue;
    for (const [k, v] of Object.entries(from)) {
      const c = copy(v);
      if (Array.isArray(to)) to.push(c);
      else Object.defineProperty(to, clean(k), { value: c, enumerable: true, writable: true, configurable: true });
      stack.push([v, c]);
    }
  }
  return { data: root, changes };
}
