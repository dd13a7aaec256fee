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

/** What one narrowing call did (a test's seam: work, not time): From/Subject fields examined, values decoded with libmime. */
export interface NarrowingWork {
  fields: number;
  decoded: number;
}

const FROM = Buffer.from('from');
const SUBJECT = Buffer.from('subject');

/** The field name `name` (lower-case ASCII) starts line `[at, end)`, case-insensitively, then white space and a colon: the value's offset, else -1. */
function valueAfter(h: Buffer, at: number, end: number, name: Buffer): number {
  if (end - at <= name.length) return -1;
  for (let i = 0; i < name.length; i++) if ((h[at + i]! | 0x20) !== name[i]) return -1;
  let i = at + name.length;
  while (i < end && (h[i] === 0x20 || h[i] === 0x09)) i++;
  return h[i] === 0x3a ? i + 1 : -1;
}

/**
 * The narrowing test, with IMAP SEARCH semantics (RFC 3501 §6.4.4: FROM and SUBJECT match a
 * case-insensitive substring): some From field contains one of `fromAddresses`, or some Subject,
 * decoded from RFC 2047 words (libmime) when it holds `=?`, contains one of `subjectContains`.
 * Every From and Subject field counts up to {@link NARROWING_MAX_FIELDS}, and encoded values up to
 * {@link NARROWING_DECODE_BYTES}; past either the answer is true (the gates judge such a block). Lines end at CRLF, LF or a bare CR (the narrowing lets
 * through what the gates then refuse as `unreadable:line-ends`); a line starting with white space
 * continues the field before it (RFC 5322 §2.2.3). Linear in `header`.
 * @param header a header block, or its first whole lines
 * @param work counted into when given
 */
export function matches(header: Buffer, req: CheckRequest, work?: NarrowingWork): boolean {
  const from = req.fromAddresses.map((a) => a.toLowerCase()).filter(Boolean);
  const subj = req.subjectContains.map((s) => s.toLowerCase()).filter(Boolean);
  let fields = 0;
  let decodeLeft = NARROWING_DECODE_BYTES;
  /** The From or Subject field being read: its kind and the ranges of its lines. */
  let open: { subject: boolean; parts: [number, number][] } | null = null;
  const judge = (): boolean => {
    if (!open) return false;
    const value = Buffer.concat(open.parts.map(([s, e]) => header.subarray(s, e))).toString('utf8').trim();
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
  let at = 0;
  while (at < header.length) {
    let end = at;
    while (end < header.length && header[end] !== 0x0a && header[end] !== 0x0d) end++;
    const next = header[end] === 0x0d && header[end + 1] === 0x0a ? end + 2 : end + 1;
    const c = header[at];
    if (c === 0x20 || c === 0x09) {
      open?.parts.push([at, end]);
    } else {
      if (judge()) return true;
      const f = valueAfter(header, at, end, FROM);
      const s = f < 0 ? valueAfter(header, at, end, SUBJECT) : -1;
      if (f >= 0 || s >= 0) {
        if (++fields > NARROWING_MAX_FIELDS) return true;
        if (work) work.fields++;
        open = { subject: s >= 0, parts: [[f >= 0 ? f : s, end]] };
      }
    }
    at = next;
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
