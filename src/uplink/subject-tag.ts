/**
 * The Subject of a reply: RFC 2047 decoding and the task tags `[<TAG>:<task id>]`
 * (docs/architecture.md, "The reply format").
 */
import { createRequire } from 'node:module';
import type Libmime from 'libmime';
import { loadOnce } from './parser-unavailable.js';

// Loaded on the first message judged, not at start (memory and start-up: bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);
const libmime = loadOnce('the MIME word decoder (libmime)', () => require('libmime') as typeof Libmime);

/** RFC 2047 §2 encoded-word: `=?charset?B|Q?text?=`, no whitespace or `?` inside the text. */
const ENCODED_WORD = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;

/** RFC 2047 §4.2 "Q" encoding: `_` is a space, `=XX` a byte; a stray `=` is kept as is. */
function decodeQ(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i] ?? '';
    const hex = text.slice(i + 1, i + 3);
    if (c === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (c === '_') {
      bytes.push(0x20);
    } else {
      bytes.push(...Buffer.from(c, 'utf8'));
    }
  }
  return Buffer.from(bytes);
}

/**
 * Decodes a Subject value (RFC 2047). Adjacent encoded-words are joined: the whitespace between
 * them is dropped (RFC 2047 §6.2), and when they share a charset their *bytes* are joined before
 * the charset is decoded, so a character split across two words, `B` or `Q` or one of each, comes
 * out whole (github.com/nodemailer/mailparser/pull/89; libmime alone joins only B+B and Q+Q runs).
 * The charset conversion is libmime's; an unknown charset reads as UTF-8. Folding is removed.
 *
 * @returns the decoded text; on any failure the input as it was.
 * @throws ParserUnavailableError when libmime cannot be loaded (never read as the text undecoded)
 */
export function decodeSubject(raw: string): string {
  const s = String(raw ?? '').replace(/\r?\n(?=[ \t])/g, '');
  // Loaded before the catch-all below: a missing decoder is ours to fix, never the mail's.
  const lib = s.includes('=?') ? libmime() : null;
  try {
    let out = '';
    let last = 0;
    // The run of adjacent encoded-words in one charset, not yet decoded.
    const run = { charset: '', norm: '', bytes: [] as Buffer[], open: false };
    const flush = (): void => {
      if (run.open) out += lib!.decodeWord(run.charset, 'B', Buffer.concat(run.bytes).toString('base64'));
      run.open = false;
      run.bytes = [];
    };
    for (const m of s.matchAll(ENCODED_WORD)) {
      const at = m.index ?? 0;
      const gap = s.slice(last, at);
      const charset = (m[1] ?? '').replace(/\*.*$/, ''); // RFC 2231 §5 language suffix
      const norm = libmime().normalizeCharset(charset);
      const bytes = (m[2] ?? '').toUpperCase() === 'B' ? Buffer.from(m[3] ?? '', 'base64') : decodeQ(m[3] ?? '');
      const adjacent = run.open && /^[ \t]*$/.test(gap);
      if (!adjacent || run.norm !== norm) {
        flush();
        if (!adjacent) out += gap;
        Object.assign(run, { charset, norm, open: true });
      }
      run.bytes.push(bytes);
      last = at + m[0].length;
    }
    flush();
    return out + s.slice(last);
  } catch {
    return s;
  }
}

export interface TaskTag {
  /** The tag, upper-cased. */
  tag: string;
  /** The task id, lower-cased. */
  taskId: string;
}

/**
 * The most Subject fields gate 2 reads for a tag: the one RFC 5322 §3.6 allows and one prepended
 * (a signed reply re-sent under a second, tagged Subject still verifies when h= does not oversign
 * it, RFC 6376 §8.15; gate 3 refuses it, and its refusal shows on the task it names). A header
 * block with more is refused by gate 3's rule at gate 2, none of them decoded: each costs a
 * decode, and 190 Subjects of encoded words in four charsets fill a 16 KiB prefix (uplink/gates.ts
 * `taskTag`).
 */
export const SUBJECT_FIELDS_READ = 2;

/**
 * The most characters of Subject values holding an encoded word (`=?`) decoded for one message,
 * the fields read together. Decoding costs up to about 0.4 ms a KiB (one word after another in
 * changing charsets); a genuine Subject holds far less (base64 words carry UTF-8 at about 4/3 of its
 * bytes, so 8 KiB of them carry about 6 KB of text). Past it no tag is read (`no-task-id`), and
 * the ledger shows the Subject undecoded.
 */
export const SUBJECT_DECODE_CHARS = 8 * 1024;

/** What reading the tags of Subject fields did (a test's seam: work, not time): values decoded. */
export interface SubjectWork {
  decoded: number;
}

/** Why {@link subjectTags} read no tag: too many fields, or too many characters of encoded words. */
export interface SubjectsUnread {
  over: 'fields' | 'encoded';
  /** The Subject fields, or the characters of their encoded values. */
  count: number;
}

/** Characters of `values` that would be decoded (those holding `=?`; the rest is read as is). */
function encodedChars(values: readonly string[]): number {
  return values.reduce((n, v) => n + (v.includes('=?') ? v.length : 0), 0);
}

/**
 * The task tags of a message's Subject fields (their values as written, in order), decoded
 * (RFC 2047), field after field ({@link findTaskTags} of each), within bounds that make the work
 * independent of how many Subject fields a header block holds: at most {@link SUBJECT_FIELDS_READ}
 * fields and {@link SUBJECT_DECODE_CHARS} characters of encoded values; past either, nothing is
 * decoded.
 * @param work counted into when given
 * @returns the tags (possibly none), or why none was read
 */
export function subjectTags(values: readonly string[], work?: SubjectWork): TaskTag[] | SubjectsUnread {
  if (values.length > SUBJECT_FIELDS_READ) return { over: 'fields', count: values.length };
  const encoded = encodedChars(values);
  if (encoded > SUBJECT_DECODE_CHARS) return { over: 'encoded', count: encoded };
  return values.flatMap((v) => {
    if (work) work.decoded++;
    return findTaskTags(decodeSubject(v));
  });
}

/**
 * A Subject value as the ledger shows it: decoded (RFC 2047), unless its encoded words are over
 * {@link SUBJECT_DECODE_CHARS}: then as written.
 */
export function shownSubject(value: string): string {
  return encodedChars([value]) > SUBJECT_DECODE_CHARS ? value : decodeSubject(value);
}

/** `[<TAG>:<uuid>]`; the tag as in the config (`[A-Za-z0-9][A-Za-z0-9_-]{0,31}`), any-case hex. */
const TASK_TAG = /\[([A-Za-z0-9][A-Za-z0-9_-]{0,31}):([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\]/g;

/**
 * The distinct task tags in a (decoded) Subject, in order of first appearance. Prefixes such as
 * `Re:`, `Fwd:`, `AW:` are just text around them; the same tag and id written twice (in any case)
 * count once. Gate 2 wants exactly one.
 */
export function findTaskTags(subject: string): TaskTag[] {
  const out: TaskTag[] = [];
  const seen = new Set<string>();
  for (const m of String(subject ?? '').matchAll(TASK_TAG)) {
    const tag = (m[1] ?? '').toUpperCase();
    const taskId = (m[2] ?? '').toLowerCase();
    const key = `${tag}:${taskId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ tag, taskId });
  }
  return out;
}
