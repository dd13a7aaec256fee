/**
 * The mutation catalogues of the message judge's property tests
 * (test/unit/uplink/gates.property.test.ts): authenticity-preserving mutations (the verdict must
 * stay the base's) and authenticity-breaking ones (the verdict must never promote), their
 * fast-check arbitraries, and `applyAll`, which applies a sequence of them to a base.
 */
import fc from 'fast-check';
import { type Base, type Field, type Msg, SENSITIVE, borderIndex, unfold } from './role-fields.js';

/** Random parameters; each mutation maps them onto the message it is applied to. */
interface Pick {
  a: number;
  b: number;
  text: string;
}

export type Mutation = { kind: string; pick: Pick };

export const pickArb: fc.Arbitrary<Pick> = fc.record({
  a: fc.nat(),
  b: fc.nat(),
  text: fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.string({ unit: 'binary-ascii', maxLength: 20 })),
});

const SAFE_NAMES = ['X-Mailer', 'X-Spam-Flag', 'Comments', 'Keywords', 'X-Forwarded-For', 'X-Priority', 'Thread-Topic', 'List-Id', 'Reply_Token', 'Status', 'X-Original-Authentication-Results', 'ARC-Authentication-Results'];
const LOOKALIKE_IDS = ['evilmessagingengine.com', 'mx1.messagingengine.com.evil.test', 'messagingengine.com', 'mx1.messagingengine.co', 'mx1_messagingengine.com', 'mx1.messagingengine.com.', 'xn--mx1-messagingengine-com.example', 'mx1.messagingengine.com-evil.test'];
const ANY_IDS = ['mx1.messagingengine.com', 'phl-mx-04.messagingengine.com', 'mx2.messagingengine.com', ...LOOKALIKE_IDS];

/** A header value on one line: no CR or LF. */
const oneLine = (s: string): string => s.replace(/[\r\n]/g, ' ');

function arText(id: string, p: Pick, base: Base): string {
  const variants = [
    `${id}; dkim=pass header.d=agent.example header.b=${base.headerB}; spf=pass smtp.mailfrom=agent@agent.example; dmarc=pass header.from=agent.example`,
    `${id}; dkim=fail header.d=agent.example header.b=${base.headerB}; dmarc=fail header.from=agent.example`,
    `${id}; dmarc=fail (p=reject) header.from=agent.example`,
    `${id}; dkim=pass header.d=${oneLine(p.text)}`,
    `${id}; ${oneLine(p.text)}`,
    `${id}; dkim=pass (unterminated comment header.d=agent.example`,
    `${id};\r\n    spf=pass smtp.mailfrom="x); dkim=pass header.d=agent.example; (y"@agent.example`,
  ];
  return `Authentication-Results: ${variants[p.b % variants.length]}`;
}

function at(p: number, lo: number, hi: number): number {
  return hi < lo ? lo : lo + (p % (hi - lo + 1));
}

/** Relaxed header canonicalization of a value (RFC 6376 §3.4.2). */
function relaxed(v: string): string {
  return unfold(v).replace(/[ \t]+/g, ' ').trim();
}

/** Whitespace after a field's value, on its line or on a continuation line: relaxed canonicalization deletes it. */
function trailingWhitespace(m: Msg, p: Pick, which: (f: Field) => boolean): Msg | null {
  const targets = m.fields.map((f, i) => ({ f, i })).filter(({ f }) => which(f));
  if (!targets.length) return null;
  const { f, i } = targets[p.a % targets.length]!;
  const fields = [...m.fields];
  fields[i] = { ...f, text: f.text + [' ', '\t', '\r\n ', ' \t', '\r\n\t'][p.b % 5]! };
  return { ...m, fields };
}

const preserving: Record<string, (m: Msg, p: Pick, base: Base) => Msg | null> = {
  'insert unsigned field': (m, p) => {
    const name = SAFE_NAMES[p.b % SAFE_NAMES.length]!;
    const f: Field = { text: `${name}: ${oneLine(p.text)}`, name: name.toLowerCase(), role: 'sender' };
    const fields = [...m.fields];
    fields.splice(at(p.a, 0, fields.length), 0, f);
    return { ...m, fields };
  },
  'insert A-R below border': (m, p, base) => {
    const fields = [...m.fields];
    const id = ANY_IDS[p.b % ANY_IDS.length]!;
    fields.splice(at(p.a, borderIndex(m) + 1, fields.length), 0, { text: arText(id, { ...p, b: p.a }, base), name: 'authentication-results', role: 'sender' });
    return { ...m, fields };
  },
  'insert Received below border': (m, p) => {
    const fields = [...m.fields];
    const variants = [
      `Received: from mail.agent.example (mail.agent.example [192.0.2.25])\r\n\tby mx1.messagingengine.com (Postfix) with ESMTPS id X; ${oneLine(p.text)}`,
      `Received: from evil (unknown [203.0.113.9]) by phl-mx-04.messagingengine.com; Tue, 4 Mar 2025 09:00:00 +0000`,
      `Received: from localhost (localhost [127.0.0.1]) by mx2.messagingengine.com (Postfix)`,
      `Received: ${oneLine(p.text)}`,
    ];
    fields.splice(at(p.a, borderIndex(m) + 1, fields.length), 0, { text: variants[p.b % variants.length]!, name: 'received', role: 'sender' });
    return { ...m, fields };
  },
  'insert untrusted A-R anywhere': (m, p, base) => {
    const fields = [...m.fields];
    const id = LOOKALIKE_IDS[p.b % LOOKALIKE_IDS.length]!;
    fields.splice(at(p.a, 0, fields.length), 0, { text: arText(id, { ...p, b: p.a }, base), name: 'authentication-results', role: 'provider' });
    return { ...m, fields };
  },
  'swap two fields below border': (m, p) => {
    const lo = borderIndex(m) + 1;
    const i = at(p.a, lo, m.fields.length - 1);
    const j = at(p.b, lo, m.fields.length - 1);
    if (i === j) return null;
    const fields = [...m.fields];
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
    return { ...m, fields };
  },
  'swap two fields above border': (m, p) => {
    const hi = borderIndex(m) - 1;
    if (hi < 1) return null;
    const i = at(p.a, 0, hi);
    const j = at(p.b, 0, hi);
    if (i === j) return null;
    const fields = [...m.fields];
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
    return { ...m, fields };
  },
  'change name case': (m, p) => {
    const i = at(p.a, 0, m.fields.length - 1);
    const f = m.fields[i]!;
    const colon = f.text.indexOf(':');
    const name = f.text.slice(0, colon);
    const flipped = [...name].map((c, k) => ((p.b >> k % 30) & 1 ? c.toUpperCase() : c.toLowerCase())).join('');
    const fields = [...m.fields];
    fields[i] = { ...f, text: flipped + f.text.slice(colon) };
    return { ...m, fields };
  },
  'fold at a space': (m, p) => {
    const i = at(p.a, 0, m.fields.length - 1);
    const f = m.fields[i]!;
    const colon = f.text.indexOf(':');
    const spaces = [...f.text.matchAll(/(?<=[^ \t\n]) (?=[^ \t\r])/g)].map((x) => x.index ?? 0).filter((k) => k > colon + 1);
    if (!spaces.length) return null;
    const k = spaces[p.b % spaces.length]!;
    const fields = [...m.fields];
    fields[i] = { ...f, text: `${f.text.slice(0, k)}\r\n${p.b % 2 ? '\t' : ' '}${f.text.slice(k + 1)}` };
    return { ...m, fields };
  },
  'trailing whitespace after a field value': (m, p) => trailingWhitespace(m, p, () => true),
  'trailing whitespace after From/Subject/Date/Message-ID': (m, p) => trailingWhitespace(m, p, (f) => SENSITIVE.has(f.name)),
  'trailing whitespace in body': (m, p, base) => {
    if (base.flowed) return null;
    const lines = m.body.toString('latin1').split('\r\n');
    if (p.b % 3 === 0) return { ...m, body: Buffer.from(`${lines.join('\r\n')}${'\r\n'.repeat(1 + (p.a % 3))}`, 'latin1') };
    // Lines that end in CRLF only: an SMTP body always ends in CRLF, so a whitespace-only last line
    // without one cannot arrive (and mailauth 4.13 miscounts a lone SP there; see the report).
    const i = at(p.a, 0, lines.length - 2);
    // In a multipart body an empty line ends a part's header block, and a whitespace-only line
    // continues it instead: relaxed canonicalization cannot tell the two apart, MIME can. Such a
    // change only ever loses the part (a refusal; see the report), so it is not "preserving".
    if (!base.singlePart && lines[i] === '') return null;
    lines[i] = `${lines[i]}${p.b % 2 ? ' ' : '\t '}`;
    return { ...m, body: Buffer.from(lines.join('\r\n'), 'latin1') };
  },
};

const INSERTABLE = 'ABCXYZabcxyz0123456789!#%&*+/=?^_`{|}~.,;:<>@"()[]';
/**
 * Characters inserted into the DKIM-Signature: base64 letters only, and never after b='s padding.
 * A non-base64 character inside b=, or anything after its first "=", is skipped by base64 decoders
 * (mailauth's too), so the signature still verifies over the unchanged signed bytes: lenient, but
 * the message stays authentic, so it is no breaking mutation.
 */
const BASE64_LETTERS = 'ABCXYZabcxyz0123456789+/';

const breaking: Record<string, (m: Msg, p: Pick, base: Base) => Msg | null> = {
  'duplicate From/Subject/Date/Message-ID': (m, p) => {
    const originals = m.fields.filter((f) => f.role === 'sensitive');
    const f = originals[p.b % originals.length]!;
    const text = p.a % 2 ? f.text : `${f.text.slice(0, f.text.indexOf(':') + 1)} ${oneLine(p.text) || 'x'}`;
    const fields = [...m.fields];
    fields.splice(at(p.a >> 1, 0, fields.length), 0, { text, name: f.name, role: 'sender' });
    return { ...m, fields };
  },
  'change a signed field': (m, p) => {
    const targets = m.fields.map((f, i) => ({ f, i })).filter(({ f }) => f.role === 'signed' || f.role === 'sensitive' || f.role === 'signature');
    const { f, i } = targets[p.b % targets.length]!;
    const colon = f.text.indexOf(':');
    const value = f.text.slice(colon + 1);
    // In the DKIM-Signature, never after the first padding "=" of b= (decoders stop there).
    const k = at(p.a, 0, f.role === 'signature' ? value.search(/=*\s*$/) - 1 : value.length);
    const alphabet = f.role === 'signature' ? BASE64_LETTERS : INSERTABLE;
    const c = alphabet[p.a % alphabet.length]!;
    const changed = `${value.slice(0, k)}${c}${value.slice(k)}`;
    if (relaxed(changed) === relaxed(value)) return null;
    const fields = [...m.fields];
    fields[i] = { ...f, text: f.text.slice(0, colon + 1) + changed };
    return { ...m, fields };
  },
  'remove a field that authenticity rests on': (m, p) => {
    const targets = m.fields.map((f, i) => ({ f, i })).filter(({ f }) => ['sensitive', 'signed', 'signature', 'trusted-ar'].includes(f.role));
    const { i } = targets[p.b % targets.length]!;
    return { ...m, fields: m.fields.filter((_, k) => k !== i) };
  },
  'move the trusted A-R below the border': (m, p) => {
    const i = m.fields.findIndex((f) => f.role === 'trusted-ar');
    const fields = m.fields.filter((_, k) => k !== i);
    const border = fields.findIndex((f) => f.role === 'border');
    fields.splice(at(p.a, border + 1, fields.length), 0, m.fields[i]!);
    return { ...m, fields };
  },
  'contradicting field by the provider above the border': (m, p, base) => {
    const variants = [
      `Authentication-Results: ${base.authservId}; dkim=fail (bad signature) header.d=${base.headerD} header.b=${base.headerB}`,
      `Authentication-Results: ${base.authservId}; dmarc=fail (p=reject) header.from=agent.example`,
      `Authentication-Results: ${base.authservId}; dkim=pass (unterminated comment header.d=${base.headerD}`,
      `Authentication-Results: ${base.authservId}; dkim=pass header.d=${base.headerD} header.d=evil.example header.b=${base.headerB}`,
    ];
    const fields = [...m.fields];
    fields.splice(at(p.a, 0, borderIndex(m)), 0, { text: variants[p.b % variants.length]!, name: 'authentication-results', role: 'provider' });
    return { ...m, fields };
  },
  'change a body byte': (m, p) => {
    const body = Buffer.from(m.body);
    const candidates: number[] = [];
    for (let k = 0; k < body.length; k++) if (body[k]! > 0x20 && body[k]! < 0x7f) candidates.push(k);
    if (!candidates.length) return null;
    const k = candidates[p.a % candidates.length]!;
    const c = INSERTABLE.charCodeAt(p.b % INSERTABLE.length);
    if (body[k] === c) return null;
    body[k] = c;
    return { ...m, body };
  },
  'append text to the body': (m, p) => {
    const text = `${oneLine(p.text)}X`;
    return { ...m, body: Buffer.concat([m.body, Buffer.from(p.a % 2 ? `\r\n${text}\r\n` : text, 'utf8')]) };
  },
  're-encode the body': (m, p, base) => {
    if (!base.singlePart) return null;
    const b64 = m.body.toString('base64').replace(/.{76}/g, '$&\r\n');
    const fields = m.fields.map((f) => (f.name === 'content-transfer-encoding' && p.a % 2 ? { ...f, text: 'Content-Transfer-Encoding: base64' } : f));
    return { fields, body: Buffer.from(`${b64}\r\n`, 'latin1') };
  },
};

export const preservingArb: fc.Arbitrary<Mutation> = fc.record({ kind: fc.constantFrom(...Object.keys(preserving)), pick: pickArb });
export const breakingArb: fc.Arbitrary<Mutation> = fc.record({ kind: fc.constantFrom(...Object.keys(breaking)), pick: pickArb });

export function applyAll(base: Base, ps: Mutation[], b: Mutation | null): { msg: Msg; applied: string[]; broke: boolean } {
  let msg = base.msg;
  const applied: string[] = [];
  for (const p of ps) {
    const next = preserving[p.kind]!(msg, p.pick, base);
    if (next) {
      msg = next;
      applied.push(p.kind);
    }
  }
  let broke = false;
  if (b) {
    const next = breaking[b.kind]!(msg, b.pick, base);
    if (next) {
      msg = next;
      applied.push(`BREAK: ${b.kind}`);
      broke = true;
    }
  }
  return { msg, applied, broke };
}
