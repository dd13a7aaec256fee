/**
 * The message as local DKIM verification reads it: without the DKIM-Signature fields that cannot
 * stand for an agent, so the verifier (mailauth) spends no body hash, no key request and no RSA
 * operation on them (docs/architecture.md, gate 7).
 */
import { parseDkimSignatures, type DkimSignatureInfo } from './dkim.js';
import { headerEnd, type HeaderField } from './raw-headers.js';

const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;

/**
 * `raw` without its DKIM-Signature fields whose `b=` is not one of `keep`'s (unreadable ones
 * included), every other byte as it was: a field is a line not starting with SP or HTAB and the
 * lines that continue it (RFC 5322 §2.2.3), up to the header block's empty line. `raw` itself
 * when nothing is removed, or when a signature of `keep` signs DKIM-Signature fields (its `h=`
 * names one: removing a field could change what it signed, RFC 6376 §5.4.2 — then the verifier
 * reads them all, and uplink/dkim.ts still looks up no key but `keep`'s).
 *
 * Gate 3 refused any line of the header block that is neither a field nor a continuation before
 * this runs, so the verifier's reading of the fields and this one agree.
 */
export function withoutOtherSignatures(raw: Buffer, keep: readonly DkimSignatureInfo[]): Buffer {
  if (keep.some((s) => s.signedHeaders.includes('dkim-signature'))) return raw;
  const end = headerEnd(raw);
  const headerBytes = end < 0 ? raw.length : end;
  const starts: number[] = [];
  for (let i = 0; i < headerBytes; ) {
    if (raw[i] !== SP && raw[i] !== HTAB) starts.push(i);
    const nl = raw.indexOf(LF, i);
    i = nl < 0 || nl >= headerBytes ? headerBytes : nl + 1;
  }
  starts.push(headerBytes);
  const wanted = new Set(keep.map((s) => s.b));
  const kept: Buffer[] = [];
  let removed = 0;
  for (let f = 0; f + 1 < starts.length; f++) {
    const field = raw.subarray(starts[f], starts[f + 1]);
    const colon = field.indexOf(':');
    const lname = colon < 0 ? '' : field.toString('latin1', 0, colon).trim().toLowerCase();
    if (lname === 'dkim-signature') {
      const value = field.toString('latin1', colon + 1);
      const [sig] = parseDkimSignatures([{ name: 'DKIM-Signature', lname, value, raw: value, index: f }]);
      if (!sig || !wanted.has(sig.b)) {
        removed++;
        continue;
      }
    }
    kept.push(field);
  }
  return removed === 0 ? raw : Buffer.concat([...kept, raw.subarray(headerBytes)]);
}

/**
 * The b= values that more than one DKIM-Signature field carries with different contents (every
 * field, parseable or not, any d=). A b= is the signature over its own field and the headers it
 * names (RFC 6376 §3.5, §3.7), so two different fields cannot both be signed by it: one is a copy.
 * Local verification reports results by b=, so the copy would be credited with the pass of the
 * field it copied: a copy without the original's `l=`, or with a wider `h=`, was taken as a
 * candidate that verified (attack review 5). Byte-identical copies verify alike and are not counted.
 */
export function copiedSignatures(fields: readonly HeaderField[]): Set<string> {
  const byB = new Map<string, string>();
  const copied = new Set<string>();
  for (const f of fields) {
    if (f.lname !== 'dkim-signature') continue;
    const b = /(?:^|;)\s*b\s*=([^;]*)/i.exec(f.value)?.[1]?.replace(/\s+/g, '');
    if (!b) continue;
    const whole = f.value.replace(/\s+/g, '');
    const seen = byB.get(b);
    if (seen === undefined) byB.set(b, whole);
    else if (seen !== whole) copied.add(b);
  }
  return copied;
}
