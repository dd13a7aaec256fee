/**
 * The reply body format (docs/architecture.md, "The reply format"):
 * ```
 * reply_token: <32 lowercase hex>
 * status: done | input-required | failed | rejected | working
 * ---
 * <the answer>
 * ```
 * The body is decoded by mailparser (quoted-printable, base64, charsets, format=flowed, HTML-only
 * mail turned into text); embedded `message/rfc822` parts are kept out of the text, so a forwarded
 * message can carry neither a token nor an answer. Headers are never read here: mailparser keeps
 * only the first of duplicate fields (src/uplink/raw-headers.ts reads them).
 */
import type { SimpleParserOptions } from 'mailparser';
import { classifyAttachments, type RawAttachment, type ReplyAttachment } from './attachments.js';
import { BudgetError, offload, OFFLOAD_MIN_BYTES, WorkerLostError, type BudgetTimer } from './offload.js';
import { Lines } from './reply-lines.js';

/**
 * The words of the `status:` line, in the order the agent's instructions list them
 * (docs/architecture.md, "The reply format"): `done` (the answer), `input-required` (a question to
 * the caller), `failed` (the agent tried and could not do the job), `rejected` (the agent will not
 * do it: A2A v1.0 §4.1.3 TaskState, TASK_STATE_REJECTED, "the agent has decided to not perform the
 * task … once an agent has determined it can't or won't proceed"), `working` (a progress note).
 * The parser keeps any word (lower-cased); gate 11 (src/uplink/gates.ts `replyStatus`) accepts these.
 */
export const REPLY_STATUS_WORDS = ['done', 'input-required', 'failed', 'rejected', 'working'] as const;

/** One word of {@link REPLY_STATUS_WORDS}. */
export type ReplyStatusWord = (typeof REPLY_STATUS_WORDS)[number];

export interface ParsedReply {
  /** The `reply_token:` value as written (trimmed), or null; the gate compares it to the live token. */
  token: string | null;
  /**
   * `missing`: no `reply_token:` line before the `---` line of the reply block; `several`: more
   * than one there; `only-in-quote`: none there but one in the quoted text below; `unparsed`: the
   * body was not read (see `unparsed`).
   */
  tokenProblem: null | 'missing' | 'several' | 'only-in-quote' | 'unparsed';
  /** The `status:` value as written (trimmed), or null. */
  status: string | null;
  statusProblem: null | 'missing' | 'several';
  /** The whole answer after the `---` line, blank lines around it trimmed; '' when there is none. */
  answer: string;
  /** Non-blank lines after the answer left out as quoted text or a signature (shown to the caller as a note). */
  omittedLines: number;
  /** Where the text came from: a text/plain part, the HTML (no text/plain part), or nothing readable. */
  bodyKind: 'text' | 'html' | 'none';
  /** Set when the body was not read, and why (over the size or the time budget, past a parser cap). */
  unparsed?: string;
  /** With `unparsed`: which cap kept the body from being read (gate 9's verdict `unparsed:<cap>`). */
  unparsedBy?: UnparsedCap;
  /** The MIME parts that are not the body, in order (src/uplink/attachments.ts); none when unparsed. */
  attachments: ReplyAttachment[];
}

/**
 * Why a reply's body was not read, each a verdict `unparsed:<cap>` (src/uplink/verdicts.ts):
 * - `parts`: more than 1,000 MIME parts, the message itself and each multipart counted (so 998
 *   attachments beside a text part are the most); mailparser then fails the whole message;
 * - `part-header`: a part's header over 1 MiB;
 *   (both caps are mailparser's splitter's, @zone-eu/mailsplit `MAX_CHILD_NODES` and
 *   `MAX_HEAD_SIZE`: mailparser's options `maxChildNodes` and `maxHeadSize`, left at their defaults)
 * - `size`: over {@link REPLY_PARSE_MAX_BYTES};
 * - `time`: over the worker's time budget (offload.ts `OFFLOAD_BUDGET_MS`);
 * - `error`: the parser failed on it otherwise (also: an HTML-only body with text in it that
 *   mailparser's HTML-to-text turns into none, as it does past about 1,500 nested elements).
 */
export type UnparsedCap = 'parts' | 'part-header' | 'size' | 'time' | 'error';

/** `mailbox.max_attachment_bytes` when the caller gives none (the config default). */
const DEFAULT_MAX_ATTACHMENT_BYTES = 1024 * 1024;

/** Messages larger than this, in bytes, are not parsed for a reply (the size budget). */
export const REPLY_PARSE_MAX_BYTES = 32 * 1024 * 1024;

const PARSER_OPTIONS: SimpleParserOptions = {
  ignoreEmbedded: true,
  skipHtmlToText: true,
  skipImageLinks: true,
  skipTextToHtml: true,
  skipTextLinks: true,
  keepCidLinks: true,
  checksumAlgo: false,
};

import { hasTextOutsideTags, parserFailure } from './parser-failure.js';
import { ParserUnavailableError } from './parser-unavailable.js';

export { ParserUnavailableError };

/**
 * mailparser, loaded by the first reply parsed, not at start (memory and start-up: bench/RESULTS.md,
 * machine-limit).
 * @throws ParserUnavailableError when it cannot be loaded
 */
async function loadParser(): Promise<typeof import('mailparser')> {
  try {
    return await import('mailparser');
  } catch (err) {
    throw new ParserUnavailableError(`the MIME parser (mailparser) could not be loaded: ${(err as Error).message}`);
  }
}

/**
 * The body as text: the text/plain part(s) when there is one with content, else the HTML
 * converted by mailparser; and every other part, as mailparser decoded it (an embedded
 * `message/rfc822` among them: kept as an attachment, never read as text). Never throws on the
 * message's bytes.
 *
 * The HTML is converted only when `convertHtml`: its cost is not linear in the HTML's
 * size (each nested `<blockquote>` or list prefixes every line inside it again, so its output and
 * its time grow with depth × lines: 256 KiB of HTML nested 300 deep held the event loop 18 s, attack
 * review 6, F1), so it runs on the worker under the offload budget, never on the event loop
 * ({@link parseReply}). Without `convertHtml`, an HTML-only body gives `needsHtml` and nothing else.
 * @throws ParserUnavailableError when the parser cannot be loaded (never read as an empty body)
 */
async function bodyText(
  raw: Buffer,
  convertHtml: boolean,
): Promise<{ text: string; kind: ParsedReply['bodyKind']; attachments: RawAttachment[]; failed?: { why: string; cap: UnparsedCap } } | { needsHtml: true }> {
  const { simpleParser } = await loadParser();
  try {
    const plain = await simpleParser(raw, PARSER_OPTIONS);
    const attachments = plain.attachments.map((a) => ({ filename: a.filename ?? null, contentType: a.contentType, content: a.content }));
    if (typeof plain.text === 'string' && plain.text.trim() !== '') return { text: plain.text, kind: 'text', attachments };
    if (typeof plain.html !== 'string' || plain.html.trim() === '') return { text: '', kind: 'none', attachments };
    if (!convertHtml) return { needsHtml: true };
    const converted = await simpleParser(raw, { ...PARSER_OPTIONS, skipHtmlToText: false });
    const text = typeof converted.text === 'string' ? converted.text : '';
    if (text.trim() !== '') return { text, kind: 'html', attachments };
    // HTML with text in it that converts to none: the converter gave up (it returns '' past about
    // 1,500 nested elements, silently), which is the parser failing, not a reply without a block.
    if (hasTextOutsideTags(plain.html)) return { text: '', kind: 'none', attachments, failed: { why: 'the HTML body holds text but its conversion to text gave none (mailparser HTML-to-text; nesting too deep?)', cap: 'error' } };
    return { text: '', kind: 'none', attachments };
  } catch (err) {
    return { text: '', kind: 'none', attachments: [], failed: parserFailure(err) };
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

/** `On ` opening a line (the attribution's start). */
const ON_PREFIX = /^\s*On\s/i;
/** ` wrote:` closing a line (the attribution's end). One start per position, fixed text: linear. */
const WROTE_SUFFIX = /(?:^|\s)wrote:\s*$/i;
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
 * `On <date>, <name> wrote:` on one line: `On` and whitespace first, `wrote:` last, and a digit (the
 * date) between them. Tested piece by piece so each test is linear in the line (the one regular
 * expression `^\s*On\s.*\d.*\swrote:\s*$` backtracks quadratically on a long line of digits).
 */
function isOnWrote(line: string): boolean {
  const on = ON_PREFIX.exec(line);
  const wrote = on && WROTE_SUFFIX.exec(line);
  if (!on || !wrote || wrote.index < on[0].length) return false;
  return /\d/.test(line.slice(on[0].length, wrote.index));
}

/** The attribution's first line when it is wrapped: `On` and whitespace, then a digit somewhere, and no `wrote:` yet. */
function isOnStart(line: string): boolean {
  const on = ON_PREFIX.exec(line);
  return on !== null && /\d/.test(line.slice(on[0].length)) && !WROTE_SUFFIX.test(line);
}

/**
 * Whether line `i` opens quoted text by a header-like marker: `On … wrote:` (also wrapped over two
 * lines), `-----Original Message-----`, a forward banner, or an Outlook-style quoted header block
 * (`From:` followed within four lines by `Sent:`/`Date:` and `To:`/`Subject:`, with the `____` rule
 * Outlook puts above it; email_reply_parser #69). Looks at most five lines ahead.
 */
function opensQuoteByHeader(lines: Lines, i: number): boolean {
  // Quote headers are short; the length bound keeps every test below cheap on hostile input.
  if (lines.length(i) > MAX_MARKER_LINE) return false;
  // Each marker opens with its own character: a line is tested only for the markers it could be.
  switch (lines.firstVisible(i)) {
    case 0x4f: // O
    case 0x6f: {
      const line = lines.at(i);
      if (isOnWrote(line)) return true;
      return isOnStart(line) && i + 1 < lines.count && lines.length(i + 1) <= MAX_MARKER_LINE && WROTE_SUFFIX.test(lines.at(i + 1));
    }
    case 0x2d: { // -
      const line = lines.at(i);
      return ORIGINAL_MESSAGE.test(line) || FORWARDED.test(line);
    }
    case 0x42: // B
    case 0x62:
      return BEGIN_FORWARDED.test(lines.at(i));
    case 0x46: // F
    case 0x66:
    case 0x2a: // *
      return OUTLOOK_FROM.test(lines.at(i)) && outlookBlockBelow(lines, i);
    case 0x5f: { // _
      // Outlook's divider line right above such a block belongs to the quote.
      if (!OUTLOOK_RULE.test(lines.at(i))) return false;
      const at = i + 1 < lines.count && lines.blank(i + 1) ? i + 2 : i + 1;
      return at < lines.count && lines.length(at) <= MAX_MARKER_LINE && OUTLOOK_FROM.test(lines.at(at)) && outlookBlockBelow(lines, at);
    }
    default:
      return false;
  }
}

/** `Sent:`/`Date:` and `To:`/`Subject:` within the four lines below the `From:` line `i`. */
function outlookBlockBelow(lines: Lines, i: number): boolean {
  let sent = false;
  let to = false;
  for (let j = i + 1; j <= i + 4 && j < lines.count; j++) {
    if (lines.length(j) > MAX_MARKER_LINE) continue;
    const l = lines.at(j);
    sent ||= OUTLOOK_SENT.test(l);
    to ||= OUTLOOK_TO.test(l);
  }
  return sent && to;
}

/** Index of the first line of quoted text of any kind (`>` lines included), or `lines.count`. */
function firstQuote(lines: Lines): number {
  for (let i = 0; i < lines.count; i++) {
    if (quotedLine(lines, i) || opensQuoteByHeader(lines, i)) return i;
  }
  return lines.count;
}

/** `^\s*>` without copying a long line: only its first visible character matters. */
function quotedLine(lines: Lines, i: number): boolean {
  return lines.firstVisible(i) === 0x3e;
}

/** A signature block is short: a `-- ` line with more than this many lines after it is the answer's own. */
const MAX_SIGNATURE_LINES = 12;

/**
 * Where the answer that starts at `from` ends: a header-like quote marker (`On … wrote:`, an
 * Outlook header block, an "Original Message" banner), or a `-- ` signature line followed by a
 * short signature. Nothing else cuts it — not a Markdown `>` block quote, not a `--` line followed
 * by more text — so an answer is never cut short by its own formatting.
 */
function answerEnd(lines: Lines, from: number): number {
  for (let i = from; i < lines.count; i++) {
    if (opensQuoteByHeader(lines, i)) return i;
    if (lines.count - i - 1 <= MAX_SIGNATURE_LINES && lines.length(i) <= MAX_MARKER_LINE && SIGNATURE.test(lines.at(i))) return i;
  }
  return lines.count;
}

/** Lines `from`..`to` joined, blank lines at both ends left out. */
function trimBlankLines(lines: Lines, from: number, to: number): string {
  let a = from;
  let b = to;
  while (a < b && lines.blank(a)) a++;
  while (b > a && lines.blank(b - 1)) b--;
  return lines.join(a, b);
}

/**
 * Reads the reply block from already-decoded body text (exported for tests and for callers that
 * hold the text). See `parseReply` for the rules. Linear in the text.
 */
export function parseReplyText(text: string): Omit<ParsedReply, 'bodyKind' | 'attachments'> {
  const lines = new Lines(text.replace(/^\uFEFF/, ''));
  const quoteAt = firstQuote(lines);
  let sepAt = -1;
  for (let i = 0; i < quoteAt; i++) {
    if (lines.length(i) <= MAX_MARKER_LINE && SEPARATOR.test(lines.at(i))) {
      sepAt = i;
      break;
    }
  }
  const headEnd = sepAt >= 0 ? sepAt : quoteAt;
  const tokens: string[] = [];
  const statuses: string[] = [];
  for (let i = 0; i < headEnd; i++) {
    const l = lines.at(i);
    const t = TOKEN_LINE.exec(l)?.[1];
    if (t !== undefined) tokens.push(t);
    const s = STATUS_LINE.exec(l)?.[1];
    if (s !== undefined) statuses.push(s);
  }

  let token: string | null = null;
  let tokenProblem: ParsedReply['tokenProblem'] = null;
  if (tokens.length === 1) token = (tokens[0] ?? '').trim();
  else if (tokens.length > 1) tokenProblem = 'several';
  else {
    let inQuote = false;
    for (let i = quoteAt; i < lines.count && !inQuote; i++) inQuote = TOKEN_ANYWHERE.test(lines.at(i));
    tokenProblem = inQuote ? 'only-in-quote' : 'missing';
  }

  let status: string | null = null;
  let statusProblem: ParsedReply['statusProblem'] = null;
  // Status words are case-blind like the keys: `status: Done` is `done`.
  if (statuses.length === 1) status = (statuses[0] ?? '').trim().toLowerCase();
  else statusProblem = statuses.length > 1 ? 'several' : 'missing';

  const end = sepAt >= 0 ? answerEnd(lines, sepAt + 1) : lines.count;
  const answer = sepAt >= 0 ? trimBlankLines(lines, sepAt + 1, end) : '';
  let omittedLines = 0;
  if (sepAt >= 0) for (let i = end; i < lines.count; i++) if (!lines.blank(i)) omittedLines++;
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
 * - Every other MIME part is an attachment: a file, a JSON data part, or refused over
 *   `maxAttachmentBytes` (src/uplink/attachments.ts).
 *
 * Budgets: a message over {@link REPLY_PARSE_MAX_BYTES} is not read, and a message of
 * {@link OFFLOAD_MIN_BYTES} or more, or a smaller one whose body is HTML only (its conversion to
 * text is not linear: bodyText), is decoded and parsed on a worker thread (the event loop keeps
 * answering meanwhile) within the offload budget (offload.ts `OFFLOAD_BUDGET_MS`, or `budgetMs`,
 * on the clock `timer`: offload.ts `timeoutBudget` by default) and the worker's memory limit
 * (offload.ts `WORKER_HEAP_MB`); past any of them the result says why in `unparsed`, with no token.
 *
 * @param o.maxAttachmentBytes `mailbox.max_attachment_bytes` (default 1 MiB)
 * @returns never throws, whatever the bytes; unreadable mail gives `bodyKind: 'none'`.
 */
export async function parseReply(raw: Buffer, o: { budgetMs?: number; timer?: BudgetTimer; maxAttachmentBytes?: number } = {}): Promise<ParsedReply> {
  if (raw.length > REPLY_PARSE_MAX_BYTES) {
    return unparsedReply(`${raw.length} bytes, over the ${REPLY_PARSE_MAX_BYTES / 1024 / 1024} MiB reply parse budget`, 'size');
  }
  const maxAttachmentBytes = o.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES;
  if (raw.length < OFFLOAD_MIN_BYTES) {
    // Parsed here unless its body is HTML only: that one's conversion goes to the worker too (bodyText).
    const here = await parseOnThisThread(raw, maxAttachmentBytes, false);
    if (here !== null) return here;
  }
  try {
    const r = (await offload('reply', raw, { ...(o.budgetMs !== undefined ? { budgetMs: o.budgetMs } : {}), ...(o.timer ? { timer: o.timer } : {}), options: { maxAttachmentBytes } })) as ParsedReply;
    // Buffers cross the thread as plain Uint8Arrays: give them their Buffer view back.
    return { ...r, attachments: r.attachments.map((a) => (a.kind === 'file' ? { ...a, bytes: Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength) } : a)) };
  } catch (err) {
    if (err instanceof BudgetError) return unparsedReply(err.message, 'time');
    // The message stopped the worker twice (its memory limit, offload.ts): this message's doing.
    if (err instanceof WorkerLostError) return unparsedReply(err.message, 'error');
    // The worker's own failure to load the parser crosses the thread by name.
    if (err instanceof Error && err.name === 'ParserUnavailableError') throw new ParserUnavailableError(err.message);
    throw err;
  }
}

/**
 * {@link parseReply} on this thread, without budgets (the worker runs this). Never throws on the
 * message's bytes.
 * @throws ParserUnavailableError when the parser cannot be loaded
 */
export async function parseReplyHere(raw: Buffer, maxAttachmentBytes = DEFAULT_MAX_ATTACHMENT_BYTES): Promise<ParsedReply> {
  return (await parseOnThisThread(raw, maxAttachmentBytes, true))!;
}

/** The parse on this thread; null when the body is HTML only and `convertHtml` is false (see bodyText). */
async function parseOnThisThread(raw: Buffer, maxAttachmentBytes: number, convertHtml: boolean): Promise<ParsedReply | null> {
  const body = await bodyText(raw, convertHtml);
  if ('needsHtml' in body) return null;
  const { text, kind, attachments, failed } = body;
  if (failed !== undefined) return unparsedReply(failed.why, failed.cap);
  try {
    return { ...parseReplyText(text), bodyKind: kind, attachments: classifyAttachments(attachments, maxAttachmentBytes) };
  } catch {
    return { token: null, tokenProblem: 'missing', status: null, statusProblem: 'missing', answer: '', omittedLines: 0, bodyKind: 'none', attachments: [] };
  }
}

function unparsedReply(why: string, cap: UnparsedCap): ParsedReply {
  return { token: null, tokenProblem: 'unparsed', status: null, statusProblem: 'missing', answer: '', omittedLines: 0, bodyKind: 'none', unparsed: why, unparsedBy: cap, attachments: [] };
}
