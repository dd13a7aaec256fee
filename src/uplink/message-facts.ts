/**
 * What the ledger records about a message, whatever its verdict, read from its header block (or
 * the first bytes of it): the fields every gate reads, and the first of each field shown (the
 * Subject decoded within subject-tag.ts `SUBJECT_DECODE_CHARS`).
 */
import { createHash } from 'node:crypto';
import { headerBlockReadable, headerBytesReadable, STAMP_PREFIX_BYTES } from './header-block.js';
import { fieldsNamed, headerEnd, headerPrefixFields, parseHeaderBlock, splitMessage, type HeaderField } from './raw-headers.js';
import { shownSubject } from './subject-tag.js';

/** What the ledger records about any fetched message, whatever its verdict. */
export interface MessageFacts {
  fields: HeaderField[];
  /** Header-block lines that are neither a field nor a continuation (see parseHeaderBlock). */
  malformedHeaderLines: number;
  rawSha256: string;
  size: number;
  /** First occurrence of each, as written (the ledger shows them; trust decisions use `fields`). */
  messageId: string | null;
  from: string | null;
  subject: string | null;
  date: string | null;
}

function first(fields: HeaderField[], name: string): string | null {
  return fieldsNamed(fields, name)[0]?.value ?? null;
}

/**
 * The msg-id of a Message-ID field (RFC 5322 §3.6.4): the `<…>` part, without the comments and
 * whitespace relaxed DKIM canonicalization lets anyone add without breaking the signature — so a
 * padded replay of an applied reply still matches it at gate 8a.
 */
export function normalizeMessageId(value: string | null): string | null {
  if (value === null) return null;
  const m = /<[^<>\s]+>/.exec(value);
  return m ? m[0] : value.replace(/\s+/g, '') || null;
}

/**
 * Header facts of a message; never throws.
 * @param sha256 the digest of `raw` when the caller has it (uplink/digest.ts hashes a large message in slices)
 */
export function messageFacts(raw: Buffer, size = raw.length, sha256?: string): MessageFacts {
  const { fields, malformedLines } = parseHeaderBlock(splitMessage(raw).header);
  return factsOf(fields, malformedLines, raw, size, sha256);
}

/**
 * The facts of the first bytes of a header block that runs on past them (the prefix a check reads
 * first): its whole fields only (raw-headers.ts `headerPrefixFields`), the digest of the prefix.
 * `from`, `subject`, `messageId`, `date` are their first occurrence when it lies in the prefix.
 */
export function prefixFacts(prefix: Buffer, size: number): MessageFacts {
  return factsOf(headerPrefixFields(prefix), 0, prefix, size);
}

function factsOf(fields: HeaderField[], malformedLines: number, raw: Buffer, size: number, sha256?: string): MessageFacts {
  const subject = first(fields, 'subject');
  return {
    fields,
    malformedHeaderLines: malformedLines,
    rawSha256: sha256 ?? createHash('sha256').update(raw).digest('hex'),
    size,
    messageId: normalizeMessageId(first(fields, 'message-id')),
    from: first(fields, 'from'),
    subject: subject === null ? null : shownSubject(subject),
    date: first(fields, 'date'),
  };
}

/**
 * The facts of a message whose header block is not parsed (it cannot be read as one, see
 * {@link headerBlockReadable}): its digest and size only.
 */
export function unparsedFacts(raw: Buffer, size = raw.length, sha256?: string): MessageFacts {
  return { fields: [], malformedHeaderLines: 0, rawSha256: sha256 ?? createHash('sha256').update(raw).digest('hex'), size, messageId: null, from: null, subject: null, date: null };
}

/**
 * The facts of a message whose header block cannot be read as one ({@link headerBlockReadable}),
 * read from its first {@link STAMP_PREFIX_BYTES} alone — the bytes the stamp rule reads of a long
 * header block (docs/architecture.md, "The header stage") — so its ledger row can name the task
 * its Subject tags (gate 2's reading, on these fields): the fields certainly whole within them
 * (all of them when the header block, or a message without one, ends within them; else as
 * {@link prefixFacts} takes them: raw-headers.ts `headerPrefixFields`), and only when those lines
 * themselves hold no bare CR and are UTF-8 (header-block.ts `headerBytesReadable`); else none
 * ({@link unparsedFacts}). The digest is of the whole of `raw` (given, or taken here). Parses at
 * most {@link STAMP_PREFIX_BYTES} of `raw`, whatever its size; never throws.
 *
 * @param raw what was read of the message (its header block as far as a mailbox reads it, or all of it)
 * @param size the size of the whole message, in bytes
 */
export function routingFacts(raw: Buffer, size = raw.length, sha256?: string): MessageFacts {
  const end = headerEnd(raw, STAMP_PREFIX_BYTES);
  const bodiless = end < 0 && raw.length >= size && raw.length <= STAMP_PREFIX_BYTES;
  const read = end >= 0 ? raw.subarray(0, end) : raw.subarray(0, STAMP_PREFIX_BYTES);
  const lines = end >= 0 || bodiless ? read : read.subarray(0, read.lastIndexOf(0x0a) + 1);
  if (lines.length === 0 || headerBytesReadable(lines)) return unparsedFacts(raw, size, sha256);
  const fields = end >= 0 || bodiless ? parseHeaderBlock(splitMessage(lines).header).fields : headerPrefixFields(read);
  return factsOf(fields, 0, raw, size, sha256);
}

/**
 * What the ledger records of any message: its header facts when its header block can be read
 * ({@link headerBlockReadable}), else only its digest and size (nothing of it is parsed).
 */
export function recordableFacts(raw: Buffer, size = raw.length): MessageFacts {
  return headerBlockReadable(raw, size) ? unparsedFacts(raw, size) : messageFacts(raw, size);
}
