/**
 * Our own parser of a message's raw header block, used for every trust decision: mailparser keeps
 * only the *first* of duplicate headers, so it never sees a prepended second From or a forged
 * Authentication-Results). Order and duplicates are kept exactly; nothing here throws on arbitrary
 * bytes.
 */
import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import type AddressParser from 'nodemailer/lib/addressparser/index.js';
import { loadOnce } from './parser-unavailable.js';

// Loaded on the first message judged, not at start (memory and start-up: bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);
const addressParser = loadOnce("nodemailer's address parser", () => require('nodemailer/lib/addressparser/index.js') as typeof AddressParser);

/** One header field as it stands in the message. */
export interface HeaderField {
  /** The field name as written (`DKIM-Signature`). */
  name: string;
  /** The field name lower-cased (`dkim-signature`). */
  lname: string;
  /**
   * The unfolded value: every line break followed by whitespace is removed and the whitespace kept
   * (RFC 5322 §2.2.3); the whitespace after the colon is trimmed; the final line break is dropped.
   */
  value: string;
  /** The whole field as written, name and folding included, without its final line break. */
  raw: string;
  /** Position among the fields, from the top: 0 is the topmost, i.e. the most recently added. */
  index: number;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Where the header block of a message ends: just past the first empty line (CRLF, or a bare LF,
 * RFC 5322 §2.1), looked for in the first `limit` bytes only.
 *
 * @returns the offset of the body in `raw` (the empty line is part of the header block), or -1
 *   when the first `limit` bytes hold no empty line
 */
export function headerEnd(raw: Buffer, limit = raw.length): number {
  const end = Math.min(limit, raw.length);
  let i = 0;
  while (i < end) {
    if (raw[i] === LF) return i + 1;
    if (raw[i] === CR && raw[i + 1] === LF && i + 1 < end) return i + 2;
    const nl = raw.indexOf(LF, i);
    if (nl < 0 || nl >= end) break;
    i = nl + 1;
  }
  return -1;
}

/**
 * Splits a message at the end of its header block (see {@link headerEnd}). Without an empty line
 * the whole message is header.
 *
 * @returns `header` holds the header lines with their line breaks, not the empty line; `bodyOffset`
 *   is where the body starts in `raw` (`raw.length` when there is no body).
 */
export function splitMessage(raw: Buffer): { header: Buffer; bodyOffset: number } {
  const end = headerEnd(raw);
  if (end < 0) return { header: raw, bodyOffset: raw.length };
  return { header: raw.subarray(0, raw[end - 2] === CR ? end - 2 : end - 1), bodyOffset: end };
}

/** RFC 5322 §3.6.8 field-name: printable US-ASCII except the colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;

/** Decodes field bytes: UTF-8 when they are valid UTF-8 (RFC 6532 §3.2), latin1 otherwise. */
function decodeBytes(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString('utf8') : bytes.toString('latin1');
}

/**
 * Parses the header block of a message (the whole message may be passed; the body is ignored).
 *
 * A line starting with a space or tab continues the field above it. A line without a colon, or
 * whose name is not a valid field name, is skipped together with its continuation lines. The
 * obsolete form `Name :` (whitespace before the colon, RFC 5322 §4.5.3) is accepted, so a
 * `From :` field counts as a From. Each field is decoded on its own (see `decodeBytes`).
 *
 * @returns every field in order, duplicates kept; never throws.
 */
export function parseHeaders(raw: Buffer): HeaderField[] {
  return parseHeaderBlock(raw).fields;
}

/**
 * The header fields, and the number of lines in the header block that are neither a field
 * (`name:`) nor a continuation (leading whitespace) — lines every parser drops differently:
 * DKIM canonicalization ignores them, while a MIME parser may take one for the start of the body.
 * Gate 3 refuses a message with any (a signed mail with such a line inserted still verifies).
 */
export function parseHeaderBlock(raw: Buffer): { fields: HeaderField[]; malformedLines: number } {
  const { header } = splitMessage(raw);
  const fields: HeaderField[] = [];
  let malformedLines = 0;
  // Start offset of each field's first line; continuation lines extend it.
  let start = -1;
  let end = 0;
  const flush = (): void => {
    if (start < 0) return;
    let bytes = header.subarray(start, end);
    if (bytes[bytes.length - 1] === LF) bytes = bytes.subarray(0, bytes.length - 1);
    if (bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
    start = -1;
    const text = decodeBytes(bytes);
    const colon = text.indexOf(':');
    const name = colon < 0 ? '' : trimSpaceTabEnd(text.slice(0, colon));
    if (colon < 0 || !FIELD_NAME.test(name)) {
      malformedLines++;
      return;
    }
    const value = text
      .slice(colon + 1)
      .replace(/\r?\n(?=[ \t])/g, '')
      .replace(/^[ \t]+/, '');
    fields.push({ name, lname: name.toLowerCase(), value, raw: text, index: fields.length });
  };
  let i = 0;
  while (i < header.length) {
    const nl = header.indexOf(LF, i);
    const lineEnd = nl < 0 ? header.length : nl + 1;
    const first = header[i];
    if (first === 0x20 || first === 0x09) {
      // Continuation of the current field (or of a dropped line: then `start` is -1).
      if (start >= 0) end = lineEnd;
      else malformedLines++;
    } else {
      flush();
      start = i;
      end = lineEnd;
    }
    i = lineEnd;
  }
  flush();
  return { fields, malformedLines };
}

/**
 * The fields of the first bytes of a header block that runs on past them (the prefix a mailbox
 * reads first, docs/architecture.md, "The header stage"): only fields certainly whole — the prefix
 * is cut after its last line break, and the last field left is dropped too unless the prefix shows
 * the next line begin with a character that is not a space or a tab (RFC 5322 §2.2.3: only such a
 * line continues a field), as that line may continue it. The top fields of the whole block are
 * these, in the same order and with the same indexes. Linear; never throws.
 */
export function headerPrefixFields(prefix: Buffer): HeaderField[] {
  const lastLf = prefix.lastIndexOf(LF);
  if (lastLf < 0) return [];
  const fields = parseHeaderBlock(prefix.subarray(0, lastLf + 1)).fields;
  const next = prefix[lastLf + 1];
  return next === undefined || next === 0x20 || next === 0x09 ? fields.slice(0, -1) : fields;
}

/**
 * `s` without the spaces and tabs at its end. A loop, not `/[ \t]+$/`: that pattern tries every
 * space of a run and backtracks to its end, quadratic on a field name padded with a long run of
 * spaces before an inner character (10 minutes for 0.5 MB).
 */
function trimSpaceTabEnd(s: string): string {
  let end = s.length;
  while (end > 0 && (s.charCodeAt(end - 1) === 0x20 || s.charCodeAt(end - 1) === 0x09)) end--;
  return s.slice(0, end);
}

export function fieldsNamed(fields: readonly HeaderField[], name: string): HeaderField[] {
  const lname = name.toLowerCase();
  return fields.filter((f) => f.lname === lname);
}

/** How many fields carry each (lower-cased) name. */
export function headerCounts(fields: readonly HeaderField[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const f of fields) counts.set(f.lname, (counts.get(f.lname) ?? 0) + 1);
  return counts;
}

/** The field with this name when there is exactly one; null when it is missing or repeated. */
export function singleField(fields: readonly HeaderField[], name: string): HeaderField | null {
  const found = fieldsNamed(fields, name);
  return found.length === 1 ? (found[0] ?? null) : null;
}

export type SingleAddress = { address: string } | { problem: 'none' | 'several' | 'invalid' };

/**
 * Where `<` and whitespace stand outside quoted strings and comments (RFC 5322 §3.2.2, §3.2.4):
 * used to refuse forms addressparser silently reads one way while a mail client may read another.
 */
function topLevelShape(value: string): { angles: number; words: number } {
  let angles = 0;
  let words = 0;
  let inWord = false;
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '\\' && (quoted || depth > 0)) {
      i++;
      continue;
    }
    if (quoted) {
      if (c === '"') quoted = false;
      continue;
    }
    if (depth > 0) {
      if (c === '(') depth++;
      else if (c === ')') depth--;
      continue;
    }
    if (c === '(') {
      depth = 1;
      inWord = false;
      continue;
    }
    if (c === '"') quoted = true;
    if (c === '<') angles++;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      inWord = false;
    } else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  return { angles, words };
}

/** A plain addr-spec: one `@`, no whitespace or specials, no empty or dot-edged parts (RFC 5322 §3.4.1). */
const ADDR_SPEC = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+$/;

function validAddrSpec(address: string): boolean {
  if (!ADDR_SPEC.test(address)) return false;
  const [local = '', domain = ''] = address.split('@');
  const dotOk = (s: string): boolean => !s.startsWith('.') && !s.endsWith('.') && !s.includes('..');
  return dotOk(local) && dotOk(domain);
}

/**
 * Reads a From-like field value that must name exactly one mailbox (nodemailer's addressparser,
 * plus the checks below). Members of a group count as mailboxes.
 *
 * Refused as `invalid`: two angle addresses (`<a@x> <b@y>`), a bare address followed by more
 * words (`a@x b@y`: addressparser takes `a@x` and calls the rest a name), an entry without an
 * address, and an address that is not a plain `local@domain` (quoted local parts included).
 *
 * @returns the address lower-cased, or the problem: `none` (no mailbox), `several`, `invalid`.
 * @throws ParserUnavailableError when the address parser cannot be loaded
 */
export function parseSingleAddress(value: string): SingleAddress {
  // Loaded before the catch-all below: a missing parser is ours to fix, never the mail's.
  const addressparser = addressParser();
  let entries: ReturnType<typeof AddressParser>;
  try {
    entries = addressparser(value);
  } catch {
    return { problem: 'invalid' };
  }
  const mailboxes: { address: string }[] = [];
  for (const e of entries) {
    if (e.group) mailboxes.push(...e.group.map((m) => ({ address: m.address ?? '' })));
    else mailboxes.push({ address: e.address ?? '' });
  }
  if (mailboxes.length === 0) return { problem: 'none' };
  if (mailboxes.length > 1) return { problem: 'several' };
  // For a group, look only at its member list: between the first `:` and the closing `;`.
  const isGroup = entries.some((e) => e.group);
  const list = isGroup ? value.slice(value.indexOf(':') + 1).replace(/;\s*$/, '') : value;
  const shape = topLevelShape(list);
  if (shape.angles > 1 || (shape.angles === 0 && shape.words > 1)) return { problem: 'invalid' };
  const address = (mailboxes[0]?.address ?? '').trim();
  if (!validAddrSpec(address)) return { problem: 'invalid' };
  return { address: address.toLowerCase() };
}
