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
import type { Intake } from '../../../src/core/mail-check.js';
import { parseAuthResults } from '../../../src/uplink/auth-results.js';
import { findTrustedResults } from '../../../src/uplink/border.js';
import { messageFacts, taskTag } from '../../../src/uplink/gates.js';
import { parseHeaders } from '../../../src/uplink/raw-headers.js';
import { parseReply } from '../../../src/uplink/reply-format.js';
import { type Verdict, isApplied } from '../../../src/uplink/verdicts.js';
import { type CorpusSetting, corpusStore } from '../../helpers/corpus-store.js';
import { type CorpusMessage, corpusAgent, loadManifest, loadZone, profileOf, zoneResolver } from '../../helpers/corpus.js';
import { type Mutation, applyAll, breakingArb, pickArb, preservingArb } from '../../helpers/judge-mutations.js';
import { loadBase, serialize } from '../../helpers/role-fields.js';

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

/** Genuine corpus replies of every shape: text, QP, base64, flowed, HTML-only, multipart, encoded subject, full Fastmail layout, relay. */
const BASE_FILES = manifest.messages
  .filter((m) => isApplied(m.expect.verdict) && !m.precededBy && !m.task && !/long-answer|dual-signed/.test(m.file))
  .map((m) => m.file);
const bases = BASE_FILES.map((file) => loadBase(manifest, file));

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
