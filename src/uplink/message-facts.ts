/**
 * What the ledger records about a message, whatever its verdict, read from its header block (or
 * the first bytes of it): the fields every gate reads, and the first of each field shown.
 */
import { createHash } from 'node:crypto';
import { headerBlockReadable } from './header-block.js';
import { fieldsNamed, headerPrefixFields, parseHeaderBlock, splitMessage, type HeaderField } from './raw-headers.js';
import { decodeSubject } from './subject-tag.js';

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
    subject: subject === null ? null : decodeSubject(subject),
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
 * What the ledger records of any message: its header facts when its header block can be read
 * ({@link headerBlockReadable}), else only its digest and size (nothing of it is parsed).
 */
export function recordableFacts(raw: Buffer, size = raw.length): MessageFacts {
  return headerBlockReadable(raw, size) ? unparsedFacts(raw, size) : messageFacts(raw, size);
}
