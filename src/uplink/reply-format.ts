/**
 * The reply body format (docs/architecture.md, "The reply format"):
 * ```
 * reply_token: <32 lowercase hex>
 * status: done | input-required | failed | working
 * ---
 * <the answer>
 * ```
 * The body is decoded by mailparser (quoted-printable, base64, charsets, format=flowed, HTML-only
 * mail turned into text); embedded `message/rfc822` parts are kept out of the text, so a forwarded
 * message can carry neither a token nor an answer. Headers are never read here: mailparser keeps
 * only the first of duplicate fields (src/uplink/raw-headers.ts reads them).
 */
import { simpleParser, type SimpleParserOptions } from 'mailparser';

export interface ParsedReply {
  /** The `reply_token:` value as written (trimmed), or null; the gate compares it to the live token. */
  token: string | null;
  /**
   * `missing`: no `reply_token:` line before the `---` line of the reply block; `several`: more
   * than one there; `only-in-quote`: none there but one in the quoted text below.
   */
  tokenProblem: null | 'missing' | 'several' | 'only-in-quote';
  /** The `status:` value as written (trimmed), or null. */
  status: string | null;
  statusProblem: null | 'missing' | 'several';
  /** The whole answer after the `---` line, blank lines around it trimmed; '' when there is none. */
  answer: string;
  /** Non-blank lines after the answer left out as quoted text or a signature (shown to the caller as a note). */
  omittedLines: number;
  /** Where the text came from: a text/plain part, the HTML (no text/plain part), or nothing readable. */
  bodyKind: 'text' | 'html' | 'none';
}

const PARSER_OPTIONS: SimpleParserOptions = {
  ignoreEmbedded: true,
  skipHtmlToText: true,
  skipImageLinks: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  keepCidLinks: true,
  checksumAlgo: false,
};

/**
 * The body as text: the text/plain part(s) when there is one with content, else the HTML
 * converted by mailparser. Never throws.
 */
async function bodyText(raw: Buffer): Promise<{ text: string; kind: ParsedReply['bodyKind'] }> {
  try {
    const plain = await simpleParser(raw, PARSER_OPTIONS);
    if (typeof plain.text === 'string' && plain.text.trim() !== '') return { text: plain.text, kind: 'text' };
    if (typeof plain.html !== 'string' || plain.html.trim() === '') return { text: '', kind: 'none' };
    const converted = await simpleParser(raw, { ...PARSER_OPTIONS, skipHtmlToText: false });
    const text = typeof converted.text === 'string' ? converted.text : '';
    return text.trim() === '' ? { text: '', kind: 'none' } : { text, kind: 'html' };
  } catch {
    return { text: '', kind: 'none' };
  }
}

/** RFC 3676 §4.3 signature separator `-- ` (the space is often stripped in transit). */
const SIGNATURE = /^--[ \t]*$/;
/**
 * The separator line: exactly `---`, trailing whitespace allowed (docs/architecture.md, "The reply
 * format").
 */
const SEPARATOR = /^---\s*$/;
const TOKEN_LINE = /^\s*reply_token\s*:(.*)$/i;
const STATUS_LINE = /^\s*status\s*:(.*)$/i;
/** A token line anywhere in a quoted line (`> reply_token: …`). */
const TOKEN_ANYWHERE = /(?:^|[\s>])reply_token\s*:/i;

const QUOTED = /^\s*>/;
/** `On <date>, <name> wrote:` on one line (a digit is required: the date). */
const ON_WROTE = /^\s*On\s.*\d.*\swrote:\s*$/i;
const ON_START = /^\s*On\s.*\d/i;
const WROTE_END = /(?:^|\s)wrote:\s*$/i;
const ORIGINAL_MESSAGE = /^\s*-{2,}\s*Original Message\s*-{2,}\s*$/i;
const FORWARDED = /^\s*-{2,}\s*Forwarded message\s*-{2,}\s*$/i;
const BEGIN_FORWARDED = /^\s*Begin forwarded message:\s*$/i;
const OUTLOOK_FROM = /^\s*\*?From:\*?\s+\S/i;
const OUTLOOK_SENT = /^\s*\*?(?:Sent|Date):\*?\s/i;
const OUTLOOK_TO = /^\s*\*?(?:To|Subject):\*?\s/i;
const OUTLOOK_RULE = /^\s*_{10,}\s*$/;
/** Longest line taken for a header-like quote marker. */
const MAX_MARKER_LINE = 400;

/**
 * Whether line `i` opens quoted text by a header-like marker: `On … wrote:` (also wrapped over two
 * lines), `-----Original Message-----`, a forward banner, or an Outlook-style quoted header block
 * (`From:` followed within four lines by `Sent:`/`Date:` and `To:`/`Subject:`, with the `____` rule
 * Outlook puts above it; email_reply_parser #69).
 */
function opensQuoteByHeader(lines: readonly string[], i: number): boolean {
  const line = lines[i] ?? '';
  // Quote headers are short; the length bound also keeps the `.*` patterns linear on hostile input.
  if (line.length > MAX_MARKER_LINE) return false;
  if (ON_WROTE.test(line) || ORIGINAL_MESSAGE.test(line) || FORWARDED.test(line) || BEGIN_FORWARDED.test(line)) return true;
  const next = lines[i + 1] ?? '';
  if (ON_START.test(line) && !WROTE_END.test(line) && next.length <= MAX_MARKER_LINE && WROTE_END.test(next)) return true;
  if (OUTLOOK_FROM.test(line)) {
    const below = lines.slice(i + 1, i + 5);
    return below.some((l) => OUTLOOK_SENT.test(l)) && below.some((l) => OUTLOOK_TO.test(l));
  }
  // Outlook's divider line right above such a block belongs to the quote.
  if (OUTLOOK_RULE.test(line)) {
    const at = lines.findIndex((l, j) => j > i && l.trim() !== '');
    return at > i && at <= i + 2 && OUTLOOK_FROM.test(lines[at] ?? '') && opensQuoteByHeader(lines, at);
  }
  return false;
}

/** Index of the first line of quoted text of any kind (`>` lines included), or `lines.length`. */
function firstQuote(lines: readonly string[]): number {
  for (let i = 0; i < lines.length; i++) {
    if (QUOTED.test(lines[i] ?? '') || opensQuoteByHeader(lines, i)) return i;
  }
  return lines.length;
}

/** A signature block is short: a `-- ` line with more than this many lines after it is the answer's own. */
const MAX_SIGNATURE_LINES = 12;

/**
 * Where the answer that starts at `from` ends: a header-like quote marker (`On … wrote:`, an
 * Outlook header block, an "Original Message" banner), or a `-- ` signature line followed by a
 * short signature. Nothing else cuts it — not a Markdown `>` block quote, not a `--` line followed
 * by more text — so an answer is never cut short by its own formatting.
 */
function answerEnd(lines: readonly string[], from: number): number {
  for (let i = from; i < lines.length; i++) {
    if (opensQuoteByHeader(lines, i)) return i;
    if (SIGNATURE.test(lines[i] ?? '') && lines.length - i - 1 <= MAX_SIGNATURE_LINES) return i;
  }
  return lines.length;
}

function trimBlankLines(lines: readonly string[]): string {
  let a = 0;
  let b = lines.length;
  while (a < b && (lines[a] ?? '').trim() === '') a++;
  while (b > a && (lines[b - 1] ?? '').trim() === '') b--;
  return lines.slice(a, b).join('\n');
}

/**
 * Reads the reply block from already-decoded body text (exported for tests and for callers that
 * hold the text). See `parseReply` for the rules.
 */
export function parseReplyText(text: string): Omit<ParsedReply, 'bodyKind'> {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  const quoteAt = firstQuote(lines);
  let sepAt = -1;
  for (let i = 0; i < quoteAt; i++) {
    if (SEPARATOR.test(lines[i] ?? '')) {
      sepAt = i;
      break;
    }
  }
  const head = lines.slice(0, sepAt >= 0 ? sepAt : quoteAt);
  const tokens = head.map((l) => TOKEN_LINE.exec(l)?.[1]).filter((v): v is string => v !== undefined);
  const statuses = head.map((l) => STATUS_LINE.exec(l)?.[1]).filter((v): v is string => v !== undefined);

  let token: string | null = null;
  let tokenProblem: ParsedReply['tokenProblem'] = null;
  if (tokens.length === 1) token = (tokens[0] ?? '').trim();
  else if (tokens.length > 1) tokenProblem = 'several';
  else tokenProblem = lines.slice(quoteAt).some((l) => TOKEN_ANYWHERE.test(l)) ? 'only-in-quote' : 'missing';

  let status: string | null = null;
  let statusProblem: ParsedReply['statusProblem'] = null;
  // Status words are case-blind like the keys: `status: Done` is `done`.
  if (statuses.length === 1) status = (statuses[0] ?? '').trim().toLowerCase();
  else statusProblem = statuses.length > 1 ? 'several' : 'missing';

  const end = sepAt >= 0 ? answerEnd(lines, sepAt + 1) : lines.length;
  const answer = sepAt >= 0 ? trimBlankLines(lines.slice(sepAt + 1, end)) : '';
  const omittedLines = sepAt >= 0 ? lines.slice(end).filter((l) => l.trim() !== '').length : 0;
  return { token, tokenProblem, status, statusProblem, answer, omittedLines };
}

/**
 * Parses a reply's body (docs/architecture.md, "The reply format").
 *
 * - The *reply block* is the text before the first quote marker: a line starting with `>`,
 *   `On … wrote:` (one line or wrapped over two), `-----Original Message-----`, an Outlook-style
 *   quoted header block, `---------- Forwarded message ---------`, `Begin forwarded message:`.
 * - `reply_token:` and `status:` (keys case-insensitive, values trimmed) count only in the reply
 *   block before its first `---` line, and must appear once each. Any `reply_token:` line counts,
 *   whatever its value.
 * - The answer is everything after that `---` line, up to a header-like quote marker or a `-- `
 *   line followed by a short signature; blank lines around it trimmed; never cut otherwise,
 *   however long. What was left out is counted in `omittedLines`. Without `---` the answer is ''.
 *
 * @returns never throws, whatever the bytes; unreadable mail gives `bodyKind: 'none'`.
 */
export async function parseReply(raw: Buffer): Promise<ParsedReply> {
  const { text, kind } = await bodyText(raw);
  try {
    return { ...parseReplyText(text), bodyKind: kind };
  } catch {
    return { token: null, tokenProblem: 'missing', status: null, statusProblem: 'missing', answer: '', omittedLines: 0, bodyKind: 'none' };
  }
}
