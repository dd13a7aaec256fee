import { createHash } from 'node:crypto';
import type { Db } from './db.js';

/**
 * Compact storage (bytes per task: bench/RESULTS.md, million): the digest gate 1 recognises a DKIM
 * signature by, and the DEFLATE (RFC 1951) packing of a reply's text and an audit entry.
 */

/**
 * Migration 13. Gate 1 recognises a DKIM signature by the SHA-256 of its key (32 bytes) instead of
 * the key itself (344 characters for RSA-2048, in the row and again in its index): old rows are
 * converted here by `mailbridge_sha256` ({@link registerStoreFunctions}, the digest of
 * {@link signatureDigest}). The index holds the digest alone: it is as good as unique, and the row
 * gives the Message-ID. A reply's text and an audit entry may be stored packed in `text_deflate` /
 * `entry_deflate`, the text column then ''; rows written before keep their text as it is.
 * `DROP COLUMN` rewrites the ledger once (https://sqlite.org/lang_altertable.html).
 */
export const COMPACT_MIGRATION = `
  ALTER TABLE ledger ADD COLUMN dkim_b_sha256 BLOB;
  UPDATE ledger SET dkim_b_sha256 = mailbridge_sha256(dkim_b) WHERE dkim_b IS NOT NULL;
  DROP INDEX ledger_by_signature;
  ALTER TABLE ledger DROP COLUMN dkim_b;
  CREATE INDEX ledger_by_signature_digest ON ledger(dkim_b_sha256) WHERE dkim_b_sha256 IS NOT NULL;
  ALTER TABLE replies ADD COLUMN text_deflate BLOB;
  ALTER TABLE audit ADD COLUMN entry_deflate BLOB;
`;

/**
 * node:zlib, loaded by the first text or raw message packed or unpacked rather than at start
 * (docs/architecture.md, "Start-up and memory"): with its archive helpers it is about 15 built-in
 * modules.
 */
export const zlib = (): typeof import('node:zlib') => process.getBuiltinModule('node:zlib');

/** The SHA-256 (32 bytes) of a DKIM signature's key (uplink/gates.ts `signatureKey`), as ledger.dkim_b_sha256 holds it. */
export function signatureDigest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/**
 * Text of at most this many UTF-16 code units is packed; longer text is left as it is (a long
 * answer is a large value anyway: src/store/large-values.ts), so packing in a recording
 * transaction stays well under a millisecond.
 */
export const PACK_MAX_CHARS = 64 * 1024;
/** What a packed text may inflate to, in bytes: UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const UNPACK_MAX_BYTES = 3 * PACK_MAX_CHARS;

/** The text packed with DEFLATE, or null when packing would not make it smaller (or it is too long to pack). */
export function packText(text: string): Buffer | null {
  if (text.length < 64 || text.length > PACK_MAX_CHARS) return null;
  const utf8 = Buffer.from(text, 'utf8');
  const packed = zlib().deflateRawSync(utf8);
  return packed.length < utf8.length ? packed : null;
}

/**
 * The text {@link packText} packed.
 * @throws Error when the bytes do not inflate within the bound (a damaged row)
 */
export function unpackText(packed: Buffer): string {
  return zlib().inflateRawSync(packed, { maxOutputLength: UNPACK_MAX_BYTES }).toString('utf8');
}

/**
 * The SQL functions the schema and the queries use, on every connection before any migration:
 * `mailbridge_sha256(text)` (migration 13) and `mailbridge_unpack(blob)` (a packed text column).
 */
export function registerStoreFunctions(db: Db): void {
  db.function('mailbridge_sha256', { deterministic: true }, (key: unknown) => (typeof key === 'string' ? signatureDigest(key) : null));
  db.function('mailbridge_unpack', { deterministic: true }, (packed: unknown) => (Buffer.isBuffer(packed) ? unpackText(packed) : null));
}
