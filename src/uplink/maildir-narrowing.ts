/**
 * The Maildir reader's narrowing (docs/architecture.md, "The header stage"): whether a message's header block names one of the
 * configured agents, read the way IMAP SEARCH would, so the person's other mail is never read whole.
 * Its cost per candidate is bounded: at most {@link NARROWING_READ_BYTES} scanned once, line by
 * line; only the From and Subject fields are kept, at most {@link NARROWING_MAX_FIELDS} of them;
 * only a value holding `=?` is decoded (RFC 2047), {@link NARROWING_DECODE_BYTES} of them at most;
 * the scan stops at the first match.
 */
import { createRequire } from 'node:module';
import type Libmime from 'libmime';
import type { CheckRequest } from './mailbox.js';

// Loaded on the first message judged, not at start (memory and start-up: bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);
let loaded: typeof Libmime | undefined;
const libmime = (): typeof Libmime => (loaded ??= require('libmime') as typeof Libmime);

/**
 * Bytes of a header block the narrowing reads at most, from the start of the file. A header block
 * that runs on past them is handed out whatever the narrowing (on its first 16 KiB, like one that
 * runs past 256 KiB), so it gets a ledger verdict: the From and Subject of real mail lie near the
 * top, and a forger's padding costs one bounded read, not a read to 256 KiB.
 */
export const NARROWING_READ_BYTES = 64 * 1024;
/**
 * From and Subject fields examined at most. A header block with more is handed out whatever they
 * say: gate 3 refuses more than one of either (`auth:duplicate-header`), so it gets a verdict, and
 * a forger's thousands of encoded Subjects cost no decoding.
 */
export const NARROWING_MAX_FIELDS = 8;

/**
 * Bytes of From and Subject values holding `=?` decoded at most, all fields together (libmime's
 * decodeWords costs up to about 0.5 ms a KiB of encoded words). Past them the block is handed out
 * undecoded: the gates judge it, and gate 2 reads its Subject.
 */
export const NARROWING_DECODE_BYTES = 4 * 1024;

/**
 * A file found not ours on its first read (one read of at most 16 KiB on the main thread and a scan
 * of its From and Subject: 0.07–0.15 ms a file over 21,000 such files on a loaded 2-core machine,
 * against 0.55–2.3 ms for a candidate judged on its prefix, docs/architecture.md "The header
 * stage") counts as 1/NOT_OURS_SHARE of a prefix against `max_prefixes_per_check`: 21,000 of them
 * and the reply behind them fit one check of the default 25,000 (1.4–3.1 s). Kept at a quarter
 * although a miss now costs less: a check's work stays bounded by what 100,000 misses cost.
 */
export const NOT_OURS_SHARE = 4;

/** What one narrowing call did (a test's seam: work, not time): From/Subject fields examined, values decoded with libmime. */
export interface NarrowingWork {
  fields: number;
  decoded: number;
}

/**
 * Which of the first From and the first Subject field were read whole (a field line after them, so
 * no continuation line can follow): with both, a block that did not match is not a candidate
 * whatever it holds further down — a second From or Subject is refused by gate 3 anyway
 * (`auth:duplicate-header`, RFC 5322 §3.6), so the narrowing need not read on.
 */
export interface FirstFields {
  from: boolean;
  subject: boolean;
}

/** The value of line `line` when it is a `name` field (`name` lower-case; white space may precede the colon), else null. */
function valueAfter(line: string, name: string): string | null {
  if (line.length <= name.length || line.slice(0, name.length).toLowerCase() !== name) return null;
  const rest = line.slice(name.length);
  const colon = rest.indexOf(':');
  return colon >= 0 && rest.slice(0, colon).trim() === '' ? rest.slice(colon + 1) : null;
}

/**
 * The narrowing test, with IMAP SEARCH semantics (RFC 3501 §6.4.4: FROM and SUBJECT match a
 * case-insensitive substring): some From field contains one of `fromAddresses`, or some Subject,
 * decoded from RFC 2047 words (libmime) when it holds `=?`, contains one of `subjectContains`.
 * Every From and Subject field counts up to {@link NARROWING_MAX_FIELDS}, and encoded values up to
 * {@link NARROWING_DECODE_BYTES}; past either the answer is true (the gates judge such a block).
 * Lines end at CRLF, LF or a bare CR (the narrowing lets through what the gates then refuse as
 * `unreadable:line-ends`); a line starting with white space continues the field before it (RFC
 * 5322 §2.2.3). Linear in `header`.
 * @param header a header block, or its first whole lines
 * @param work counted into when given
 * @param first set to which first From and Subject were read whole (see {@link FirstFields})
 */
export function matches(header: Buffer, req: CheckRequest, work?: NarrowingWork, first?: FirstFields): boolean {
  const from = req.fromAddresses.map((a) => a.toLowerCase()).filter(Boolean);
  const subj = req.subjectContains.map((s) => s.toLowerCase()).filter(Boolean);
  let fields = 0;
  let decodeLeft = NARROWING_DECODE_BYTES;
  /** The From or Subject field being read: its kind and its lines (bytes as latin1). */
  let open: { subject: boolean; parts: string[] } | null = null;
  const judge = (): boolean => {
    if (!open) return false;
    const value = Buffer.from(open.parts.join(''), 'latin1').toString('utf8').trim();
    let text = value;
    if (value.includes('=?')) {
      decodeLeft -= value.length;
      if (decodeLeft < 0) return true;
      if (work) work.decoded++;
      text = decode(value);
    }
    text = text.toLowerCase();
    const hit = (open.subject ? subj : from).some((s) => text.includes(s));
    open = null;
    return hit;
  };
  // Line by line (ends CRLF, LF or a bare CR, as `split(/\r\n|\n|\r/)` cuts them), a line taken
  // out of the text only when it is read: one that starts a From or Subject, or continues one.
  // Most lines of a flood of junk are neither: 170 lines sliced and split cost as much as the
  // file's read (bench/maildir-junk.ts).
  const text = header.toString('latin1');
  let lf = -2;
  let cr = -2;
  for (let i = 0; ; ) {
    if (lf !== -1 && lf < i) lf = text.indexOf('\n', i);
    if (cr !== -1 && cr < i) cr = text.indexOf('\r', i);
    const end = lf < 0 ? (cr < 0 ? text.length : cr) : cr < 0 ? lf : Math.min(lf, cr);
    const c = end > i ? text.charCodeAt(i) : -1;
    if (c === 0x20 || c === 0x09) {
      open?.parts.push(text.slice(i, end));
    } else {
      const closing = open;
      if (judge()) return true;
      if (first && closing) first[closing.subject ? 'subject' : 'from'] = true;
      // Only f or s can start From or Subject.
      if (c === 0x66 || c === 0x46 || c === 0x73 || c === 0x53) {
        const line = text.slice(i, end);
        const f = valueAfter(line, 'from');
        const s = f === null ? valueAfter(line, 'subject') : null;
        if (f !== null || s !== null) {
          if (++fields > NARROWING_MAX_FIELDS) return true;
          if (work) work.fields++;
          open = { subject: s !== null, parts: [(f ?? s)!] };
        }
      }
    }
    if (end === text.length) break;
    i = end + (text.charCodeAt(end) === 0x0d && text.charCodeAt(end + 1) === 0x0a ? 2 : 1);
  }
  return judge();
}

function decode(value: string): string {
  try {
    return libmime().decodeWords(value);
  } catch {
    return value;
  }
}
