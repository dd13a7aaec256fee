/**
 * Whether a header block can be read as one at all, judged before any gate that reads a field
 * (docs/architecture.md, "The gates"), and the sizes every mailbox reads a header block within.
 * Nothing here parses a field.
 */
import { isUtf8 } from 'node:buffer';
import type { Refusal } from './gates.js';
import { headerEnd } from './raw-headers.js';

/**
 * The longest header block read, in bytes, the empty line that ends it included: what a mailbox
 * reads of a header block that runs on past {@link STAMP_PREFIX_BYTES} when its stamp could not
 * refuse it (a Maildir file; IMAP `BODY.PEEK[HEADER]<0.262144>`). Longer is `too-large-header`.
 */
export const MAX_HEADER_BLOCK_BYTES = 256 * 1024;
/**
 * Bytes of a header block read first, at most (IMAP `BODY.PEEK[HEADER]<0.16384>`, a Maildir
 * file's first 16 KiB). The provider's stamp must lie within them for the stamp rule to decide: a
 * Fastmail stamp (ARC set, Authentication-Results, Received) is 3–6 KiB, the other presets' fewer
 * (docs/architecture.md, "The header stage"). A header block that ends within them is read whole
 * by this one read; the stamp rule is uplink/stamp.ts.
 */
export const STAMP_PREFIX_BYTES = 16 * 1024;
/**
 * The most lines a header block may have. mailparser's splitter counts every header line as at
 * least 64 bytes against its 1 MiB header budget and fails the whole message past it (so a block
 * of many short lines never reaches the body); 4,096 lines of at most 256 KiB stay well inside.
 */
export const MAX_HEADER_LINES = 4096;

/**
 * The header block can be read as one (docs/architecture.md, "The gates"; only gate 1 by the
 * digest, which reads no field, comes first): it ends
 * with an empty line within {@link MAX_HEADER_BLOCK_BYTES} and {@link MAX_HEADER_LINES} (or the
 * whole message is shorter: then it has no body); it holds no CR that does not end a line (RFC 5321
 * §2.3.8: no SMTP client sends a bare CR; CR-only line ends make one line of the whole block) and
 * only UTF-8 (RFC 6532 §3.2; RFC 5322 allows US-ASCII only); and a body follows it (RFC 5322 §2.1:
 * the empty line; a reply is read from the body). Each is a point where parsers part ways, so the
 * message is refused before any of its fields is judged (its first 16 KiB may still be read for
 * the task its ledger row names: message-facts.ts `routingFacts`). A NUL is not refused: RFC 5322 §4.1's
 * obsolete unstructured text allows it, and it is judged like any other byte. Linear, and reads at
 * most the first {@link MAX_HEADER_BLOCK_BYTES} of `raw`.
 *
 * @param raw the message, or its first bytes (a header block a mailbox read on its own)
 * @param size the size of the whole message, in bytes
 */
export function headerBlockReadable(raw: Buffer, size: number): Refusal | null {
  const end = headerEnd(raw, MAX_HEADER_BLOCK_BYTES);
  const unended = end < 0;
  if (unended && (raw.length > MAX_HEADER_BLOCK_BYTES || size > MAX_HEADER_BLOCK_BYTES)) {
    return { verdict: 'too-large-header', reason: `no empty line ends the header block within its first ${MAX_HEADER_BLOCK_BYTES / 1024} KiB (the message is ${size} bytes); refused unread` };
  }
  const block = unended ? raw : raw.subarray(0, end);
  let lines = 0;
  for (let i = block.indexOf(0x0a); i >= 0; i = block.indexOf(0x0a, i + 1)) lines++;
  if (lines > MAX_HEADER_LINES) {
    return { verdict: 'too-large-header', reason: `the header block has ${lines} lines, over ${MAX_HEADER_LINES}; refused unread` };
  }
  const bytes = headerBytesReadable(block);
  if (bytes) return bytes;
  if (unended) return { verdict: 'unreadable:no-body', reason: `no empty line ends the header block of this ${size}-byte message: it has no body` };
  return null;
}

/**
 * The byte rules of {@link headerBlockReadable}, on header lines (whole lines: a cut inside a
 * UTF-8 sequence is not UTF-8): no CR that does not end a line (RFC 5321 §2.3.8), only UTF-8 (RFC
 * 6532 §3.2). Linear.
 * @returns the refusal `unreadable:line-ends` or `unreadable:8bit`; null when the bytes can be read as lines of fields
 */
export function headerBytesReadable(lines: Buffer): Refusal | null {
  for (let i = lines.indexOf(0x0d); i >= 0; i = lines.indexOf(0x0d, i + 1)) {
    if (lines[i + 1] !== 0x0a) return { verdict: 'unreadable:line-ends', reason: `a CR not followed by LF at offset ${i} of the header block (CR-only line ends?)` };
  }
  if (!isUtf8(lines)) return { verdict: 'unreadable:8bit', reason: 'header bytes that are neither US-ASCII nor UTF-8' };
  return null;
}
