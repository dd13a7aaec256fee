/**
 * Property tests of the message judge (src/core/judge.ts), on top of the corpus (`corpus.test.ts`).
 *
 * (a) Mutated genuine replies. The bases are genuine corpus replies, signed and stamped once by
 *     the generator; the properties mutate their bytes and take each result in through the code a
 *     mailbox check runs (`intake`: the judge, local DKIM verification included, then the ledger
 *     row and any promotion) against a real store holding the corpus's tasks. Each mutation is classified before it is applied:
 *
 *     authenticity-preserving (the verdict must stay exactly the base's):
 *       - a header field whose name is not signed (not in the signature's h=) and is none of
 *         From, Subject, Date, Message-ID, Authentication-Results, Received, DKIM-Signature,
 *         inserted anywhere;
 *       - an Authentication-Results field of any content, or a Received field of any content,
 *         inserted below the border (the sender writes everything there);
 *       - an Authentication-Results field whose authserv-id does not match the provider pattern,
 *         inserted anywhere (above the border too);
 *       - two fields swapped where both are below the border, or both above it;
 *       - the case of a field name changed; a space in a field value folded onto a continuation
 *         line; whitespace appended to a field value (all invisible to relaxed canonicalization,
 *         and none changes what the field means: RFC 5322 §3.6.4 puts the CFWS around a msg-id
 *         outside it);
 *       - trailing spaces added to body lines ending in CRLF, or empty lines appended (invisible to
 *         relaxed body canonicalization; not applied to format=flowed bases, where a trailing
 *         space means a soft line break).
 *
 *     authenticity-breaking (the verdict must never be `applied:*` or `late:recorded`), applied
 *     after any number of preserving ones:
 *       - a second From, Subject, Date or Message-ID anywhere, copied or altered;
 *       - a signed header field, or the DKIM-Signature, changed in a way relaxed
 *         canonicalization does not undo;
 *       - From, Subject, Date, Message-ID, a signed field, the DKIM-Signature or the trusted
 *         Authentication-Results field removed;
 *       - the trusted Authentication-Results moved below the border;
 *       - a field by the provider's authserv-id above the border that contradicts the trusted
 *         one (dkim=fail for the same signature, dmarc=fail) or cannot be parsed;
 *       - a body byte changed, text appended to the body, or the body re-encoded.
 *
 * (b) The parsers never throw (or reject) on arbitrary bytes, unicode strings and header-ish
 *     structures: parseHeaders, messageFacts, taskTag, parseAuthResults, findTrustedResults,
 *     parseReply; and the judge never fails on them (`intake` never records `unreadable`).
 *
 * Run counts are set per property; together they exceed 10,000 cases.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAuthResults } from '../../../src/uplink/auth-results.js';
import { findTrustedResults } from '../../../src/uplink/border.js';
import type { Intake } from '../../../src/core/mail-check.js';
import { messageFacts, taskTag } from '../../../src/uplink/gates.js';
import { parseHeaders } from '../../../src/uplink/raw-headers.js';
import { parseReply } from '../../../src/uplink/reply-format.js';
import { isApplied, type Verdict } from '../../../src/uplink/verdicts.js';
import { corpusAgent, loadManifest, loadZone, profileOf, readMessage, zoneResolver, type CorpusMessage } from '../../helpers/corpus.js';
import { corpusStore, type CorpusSetting } from '../../helpers/corpus-store.js';

const manifest = loadManifest();
const agent = corpusAgent(manifest);
const profile = profileOf(manifest);
const setting: CorpusSetting = { agents: [agent], profile, resolver: zoneResolver(loadZone().records), verifyDkim: true };

/** The verdict and reason `intake` recorded for the messages, in order, taken into a fresh corpus store. */
async function judged(raws: Buffer[], live: CorpusMessage['task'] = {}): Promise<{ verdict: Verdict; reason: string }[]> {
  const store = corpusStore(manifest, setting, live);
  try {
    const out: { verdict: Verdict; reason: string }[] = [];
    for (const raw of raws) {
      const i: Intake = await store.take(raw);
      if (i.kind !== 'recorded') throw new Error(`expected a recorded verdict, got ${i.kind}`);
      out.push({ verdict: i.verdict, reason: i.reason });
    }
    return out;
  } finally {
    store.close();
  }
}
const judgedOne = async (raw: Buffer, live: CorpusMessage['task'] = {}) => (await judged([raw], live))[0]!;

/** Cases run per property, by name; printed at the end. */
const runs = new Map<string, number>();
const started = Date.now();
afterAll(() => {
  const total = [...runs.values()].reduce((a, b) => a + b, 0);
  const lines = [...runs].map(([name, n]) => `  ${String(n).padStart(6)}  ${name}`);
  console.log(`property cases: ${total} in ${((Date.now() - started) / 1000).toFixed(1)} s\n${lines.join('\n')}`);
});

function counted<T>(name: string, body: (v: T) => Promise<void> | void): (v: T) => Promise<void> {
  return async (v) => {
    runs.set(name, (runs.get(name) ?? 0) + 1);
    await body(v);
  };
}

// ---------------------------------------------------------------------------------------------
// Messages as fields with roles (computed here, independently of the code under test)
// ---------------------------------------------------------------------------------------------

type Role = 'border' | 'trusted-ar' | 'signature' | 'signed' | 'sensitive' | 'provider' | 'sender';

interface Field {
  text: string;
  /** Lower-cased name of the field as the base had it. */
  name: string;
  role: Role;
}

interface Msg {
  fields: Field[];
  body: Buffer;
}

interface Base {
  file: string;
  expected: Verdict;
  msg: Msg;
  flowed: boolean;
  singlePart: boolean;
  authservId: string;
  headerD: string;
  headerB: string;
}

const SENSITIVE = new Set(['from', 'subject', 'date', 'message-id']);

function splitFields(header: string): string[] {
  const out: string[] = [];
  for (const line of header.split('\r\n')) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1] += `\r\n${line}`;
    else out.push(line);
  }
  return out;
}

function nameOf(text: string): string {
  return text.slice(0, text.indexOf(':')).trim().toLowerCase();
}

function unfold(text: string): string {
  return text.replace(/\r\n(?=[ \t])/g, '');
}

function loadBase(file: string): Base {
  const raw = readMessage(file);
  const end = raw.indexOf('\r\n\r\n');
  const texts = splitFields(raw.subarray(0, end).toString('utf8'));
  const body = raw.subarray(end + 4);
  // The border: the provider's Received from the agent's MTA or the relay (the generator's peers).
  const border = texts.findIndex((t) => /^Received: from \S+ \(\S+ \[(?:192\.0\.2\.25|198\.51\.100\.7)\]\)/.test(t));
  // The agent's signature (a base may also carry the relay's own, which authenticity does not rest on).
  const isAgentSignature = (t: string): boolean => /^DKIM-Signature:/i.test(t) && /[;\s]d=agent\.example\.?;/i.test(unfold(t));
  const sigText = texts.find(isAgentSignature) ?? '';
  const h = new Set(
    (/\bh=([^;]*)/.exec(unfold(sigText))?.[1] ?? '')
      .split(':')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const ar = texts.find((t, i) => i < border && /^Authentication-Results:/i.test(t) && /dkim=pass/.test(t)) ?? '';
  const fields = texts.map((text, i): Field => {
    const name = nameOf(text);
    let role: Role = i < border ? 'provider' : 'sender';
    if (i === border) role = 'border';
    else if (text === ar) role = 'trusted-ar';
    else if (isAgentSignature(text)) role = 'signature';
    else if (SENSITIVE.has(name)) role = 'sensitive';
    else if (h.has(name) && i > border) role = 'signed';
    return { text, name, role };
  });
  if (border < 0 || !ar || !sigText) throw new Error(`${file}: not a stamped, signed base`);
  const contentType = unfold(texts.find((t) => /^Content-Type:/i.test(t)) ?? '');
  const m = manifest.messages.find((x) => x.file === file);
  return {
    file,
    expected: m!.expect.verdict,
    msg: { fields, body },
    flowed: /format=flowed/i.test(contentType),
    singlePart: !/multipart/i.test(contentType),
    authservId: /^Authentication-Results:\s*([^;\s]+)/.exec(ar)?.[1] ?? '',
    headerD: /header\.d=(\S+)/.exec(unfold(ar))?.[1] ?? '',
    headerB: /header\.b=(\S+)/.exec(unfold(ar))?.[1] ?? '',
  };
}

function serialize(m: Msg): Buffer {
  return Buffer.concat([Buffer.from(`${m.fields.map((f) => f.text).join('\r\n')}\r\n\r\n`, 'utf8'), m.body]);
}

const borderIndex = (m: Msg): number => m.fields.findIndex((f) => f.role === 'border');

/** Genuine corpus replies of every shape: text, QP, base64, flowed, HTML-only, multipart, encoded subject, full Fastmail layout, relay. */
const BASE_FILES = manifest.messages
  .filter((m) => isApplied(m.expect.verdict) && !m.precededBy && !m.task && !/long-answer|dual-signed/.test(m.file))
  .map((m) => m.file);
const bases = BASE_FILES.map(loadBase);

// ---------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------

/** Random parameters; each mutation maps them onto the message it is applied to. */
interface Pick {
  a: number;
  b: number;
  text: string;
}

type Mutation = { kind: string; pick: Pick };

const pickArb: fc.Arbitrary<Pick> = fc.record({
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

const preservingArb: fc.Arbitrary<Mutation> = fc.record({ kind: fc.constantFrom(...Object.keys(preserving)), pick: pickArb });
const breakingArb: fc.Arbitrary<Mutation> = fc.record({ kind: fc.constantFrom(...Object.keys(breaking)), pick: pickArb });

function applyAll(base: Base, ps: Mutation[], b: Mutation | null): { msg: Msg; applied: string[]; broke: boolean } {
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

const verdictsSeen = new Map<string, number>();
/** A quarter of the cases run against a task the sweep failed on its deadline (token still live). */
const lateArb = fc.integer({ min: 0, max: 3 }).map((n) => n === 0);
const DEADLINE_FAILED = { state: 'FAILED', failedBy: 'deadline' } as const;

describe('message judge properties', () => {
  it('the bases are genuine replies the judge promotes unchanged', async () => {
    expect(bases.length).toBeGreaterThanOrEqual(8);
    for (const base of bases) {
      const out = await judgedOne(serialize(base.msg));
      expect(out.verdict, base.file).toBe(base.expected);
    }
  });

  it('authenticity-preserving mutations never change the verdict', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.nat({ max: bases.length - 1 }), fc.array(preservingArb, { minLength: 1, maxLength: 4 }), lateArb),
        counted('(a) preserving mutations of genuine replies', async ([i, ps, late]: [number, Mutation[], boolean]) => {
          const base = bases[i]!;
          const { msg, applied } = applyAll(base, ps, null);
          const out = await judgedOne(serialize(msg), late ? DEADLINE_FAILED : {});
          verdictsSeen.set(`preserving → ${out.verdict}`, (verdictsSeen.get(`preserving → ${out.verdict}`) ?? 0) + 1);
          const expected = late ? 'late:recorded' : base.expected;
          expect({ verdict: out.verdict, file: base.file, applied }).toEqual({ verdict: expected, file: base.file, applied });
        }),
      ),
      { numRuns: 1500 },
    );
  });

  it('authenticity-breaking mutations never promote', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.nat({ max: bases.length - 1 }), fc.array(preservingArb, { maxLength: 3 }), breakingArb, lateArb),
        counted('(a) breaking mutations of genuine replies', async ([i, ps, b, late]: [number, Mutation[], Mutation, boolean]) => {
          const base = bases[i]!;
          const { msg, applied, broke } = applyAll(base, ps, b);
          fc.pre(broke);
          const out = await judgedOne(serialize(msg), late ? DEADLINE_FAILED : {});
          verdictsSeen.set(`breaking → ${out.verdict}`, (verdictsSeen.get(`breaking → ${out.verdict}`) ?? 0) + 1);
          expect({ promoted: isApplied(out.verdict) || out.verdict === 'late:recorded', file: base.file, applied, reason: out.reason }).toEqual({
            promoted: false,
            file: base.file,
            applied,
            reason: out.reason,
          });
        }),
      ),
      { numRuns: 2500 },
    );
  });

  it('a replay of an applied reply, however re-wrapped, is a duplicate', { timeout: 120_000 }, async () => {
    const forced = fc.record({ kind: fc.constant('trailing whitespace after From/Subject/Date/Message-ID'), pick: pickArb });
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(fc.nat({ max: bases.length - 1 }), fc.array(preservingArb, { maxLength: 3 }), forced, lateArb),
        counted('(a) replays of applied genuine replies', async ([i, ps, f, late]: [number, Mutation[], Mutation, boolean]) => {
          const base = bases[i]!;
          const { msg, applied } = applyAll(base, [...ps, f], null);
          const [first, again] = await judged([serialize(base.msg), serialize(msg)], late ? DEADLINE_FAILED : {});
          expect(first!.verdict).toBe(late ? 'late:recorded' : base.expected);
          verdictsSeen.set(`replay → ${again!.verdict}`, (verdictsSeen.get(`replay → ${again!.verdict}`) ?? 0) + 1);
          expect({ verdict: again!.verdict, file: base.file, applied }).toEqual({ verdict: 'duplicate', file: base.file, applied });
        }),
      ),
      { numRuns: 600 },
    );
  });

  afterAll(() => {
    console.log(`mutation verdicts:\n${[...verdictsSeen].sort().map(([k, n]) => `  ${String(n).padStart(5)}  ${k}`).join('\n')}`);
  });
});

// ---------------------------------------------------------------------------------------------
// (b) The parsers never throw
// ---------------------------------------------------------------------------------------------

const FRAGMENTS = [
  ';', ' ', '\t', '(', ')', '"', '\\', '=', ':', '.', '@', '<', '>', ',', '[', ']', '\r\n ', '\r\n\t', '\n', '\r', '\0', 'é', '東', '\u{1F600}', '\uFFFD',
  'dkim=pass', 'dkim', 'pass', 'header.d=agent.example', 'header.b=', 'dmarc=fail', 'spf=pass', 'smtp.mailfrom=', 'none', 'reason=',
  'mx1.messagingengine.com', 'evilmessagingengine.com', 'agent@agent.example', 'agent.example', '127.0.0.1', '[203.0.113.9]', '[IPv6:::1]',
  'from', 'by', 'with', 'id', 'for', '=?UTF-8?B?W0dST0s6?=', '=?UTF-8?Q?=E6=9D?=', `[GROK:${manifest.liveTaskId}]`, 'v=1', 'a=rsa-sha256', 'b=', 'bh=', 'l=10', 'h=from:subject',
  'reply_token: ', 'status: done', '---', '> ', '\u00A0',
];
const fragmentString = (max: number): fc.Arbitrary<string> =>
  fc.array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ unit: 'grapheme', maxLength: 6 }), fc.string({ unit: 'binary-ascii', maxLength: 4 })), { maxLength: max }).map((a) => a.join(''));

const FIELD_NAMES = ['From', 'Subject', 'Date', 'Message-ID', 'Received', 'Authentication-Results', 'DKIM-Signature', 'Content-Type', 'Content-Transfer-Encoding', 'MIME-Version', 'To', 'X-Any', 'from ', 'SUBJECT', 'Bad Name', ''];
const headerishMessage: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.array(fc.tuple(fc.constantFrom(...FIELD_NAMES), fragmentString(12)), { maxLength: 14 }),
    fc.constantFrom('\r\n\r\n', '\n\n', '\r\n', '\r\n \r\n', ''),
    fragmentString(20),
  )
  .map(([fields, sep, body]) => Buffer.from(`${fields.map(([n, v]) => `${n}:${v}`).join('\r\n')}${sep}${body}`, 'utf8'));

/** A genuine base with random fields spliced in at random places: deep paths of the stack get random input. */
const splicedMessage: fc.Arbitrary<Buffer> = fc
  .tuple(fc.nat({ max: bases.length - 1 }), fc.array(fc.tuple(fc.nat(), fc.constantFrom(...FIELD_NAMES), fragmentString(10)), { maxLength: 4 }), fc.option(fragmentString(10)))
  .map(([i, inserts, body]) => {
    const fields = bases[i]!.msg.fields.map((f) => f.text);
    for (const [p, n, v] of inserts) fields.splice(p % (fields.length + 1), 0, `${n}: ${v}`);
    const b = body === null ? bases[i]!.msg.body : Buffer.from(body, 'utf8');
    return Buffer.concat([Buffer.from(`${fields.join('\r\n')}\r\n\r\n`, 'utf8'), b]);
  });

const anyBytes: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 600 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary', maxLength: 200 }).map((s) => Buffer.from(s, 'utf8')),
  headerishMessage,
);

describe('the parsers never throw', () => {
  it('parseHeaders, messageFacts and taskTag on any bytes', () => {
    fc.assert(
      fc.property(
        anyBytes,
        (raw) => {
          runs.set('(b) parseHeaders/messageFacts/taskTag', (runs.get('(b) parseHeaders/messageFacts/taskTag') ?? 0) + 1);
          const fields = parseHeaders(raw);
          expect(Array.isArray(fields)).toBe(true);
          const facts = messageFacts(raw);
          const tag = taskTag(facts, [agent]);
          expect('taskId' in tag || typeof tag.verdict === 'string').toBe(true);
        },
      ),
      { numRuns: 2500 },
    );
  });

  it('parseAuthResults on any string and on A-R-shaped strings', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 120 }), fragmentString(30)), (value) => {
        runs.set('(b) parseAuthResults', (runs.get('(b) parseAuthResults') ?? 0) + 1);
        const r = parseAuthResults(value);
        expect(r === null || Array.isArray(r.results)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('findTrustedResults on header-ish messages', () => {
    fc.assert(
      fc.property(fc.oneof(headerishMessage, splicedMessage), (raw) => {
        runs.set('(b) findTrustedResults', (runs.get('(b) findTrustedResults') ?? 0) + 1);
        const out = findTrustedResults(parseHeaders(raw), profile);
        expect(typeof out.ok).toBe('boolean');
      }),
      { numRuns: 1500 },
    );
  });

  it('parseReply resolves on any bytes', { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyBytes, splicedMessage), async (raw) => {
        runs.set('(b) parseReply', (runs.get('(b) parseReply') ?? 0) + 1);
        const r = await parseReply(raw);
        expect(['text', 'html', 'none']).toContain(r.bodyKind);
      }),
      { numRuns: 800 },
    );
  });

  it('the judge gives any bytes a verdict, local DKIM verification on, and never fails on them', { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyBytes, splicedMessage, splicedMessage), async (raw) => {
        runs.set('(b) judgeMessage via intake', (runs.get('(b) judgeMessage via intake') ?? 0) + 1);
        const out = await judgedOne(raw);
        expect(out.verdict).not.toBe('unreadable');
      }),
      { numRuns: 1200 },
    );
  });
});
