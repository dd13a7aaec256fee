/**
 * The Maildir reader's narrowing (docs/architecture.md, "The reply format"): whether a message's header block names one of the
 * configured agents, read the way IMAP SEARCH would, so the person's other mail is never read whole.
 */
import { createRequire } from 'node:module';
import type Libmime from 'libmime';
import type { CheckRequest } from './mailbox.js';

// Loaded on the first message judged, not at start (memory and start-up: bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);
let loaded: typeof Libmime | undefined;
const libmime = (): typeof Libmime => (loaded ??= require('libmime') as typeof Libmime);

/**
 * Unfolded header fields of a header block, names lower-cased, in order (duplicates kept).
 * RFC 5322 §2.2.3: a line starting with white space continues the previous field. A bare CR ends
 * a line too: the narrowing lets through what the gates then refuse (`unreadable:line-ends`)
 * rather than hide a CR-only message whose From or Subject is not its first line.
 */
function headerFields(header: Buffer): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const line of header.toString('latin1').split(/\r\n|\n|\r/)) {
    if (/^[ \t]/.test(line) && out.length) {
      out[out.length - 1]!.value += line;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    out.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).trim() });
  }
  return out;
}

/**
 * The narrowing test, with IMAP SEARCH semantics (RFC 3501 §6.4.4: FROM and SUBJECT match a
 * case-insensitive substring): some From field contains one of `fromAddresses`, or some Subject,
 * decoded from RFC 2047 words (libmime), contains one of `subjectContains`. Every From and Subject
 * field counts, so a message with two of them still reaches the gates (which refuse it).
 */
export function matches(header: Buffer, req: CheckRequest): boolean {
  const fields = headerFields(header);
  const utf8 = (v: string): string => Buffer.from(v, 'latin1').toString('utf8');
  const froms = fields.filter((f) => f.name === 'from').map((f) => decode(utf8(f.value)).toLowerCase());
  const subjects = fields.filter((f) => f.name === 'subject').map((f) => decode(utf8(f.value)).toLowerCase());
  const from = req.fromAddresses.map((a) => a.toLowerCase()).filter(Boolean);
  const subj = req.subjectContains.map((s) => s.toLowerCase()).filter(Boolean);
  return froms.some((v) => from.some((a) => v.includes(a))) || subjects.some((v) => subj.some((s) => v.includes(s)));
}

function decode(value: string): string {
  try {
    return libmime().decodeWords(value);
  } catch {
    return value;
  }
}
