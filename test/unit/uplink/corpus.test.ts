/**
 * The message judge (src/core/judge.ts) proven on the corpus of attack mail in
 * `test/fixtures/corpus/` (written by `test/fixtures/generate-corpus.ts`; its manifest says what
 * each message models and the verdict docs/architecture.md requires). Each message is taken in
 * by the code a mailbox check runs — `intake`: the judge with local DKIM verification on (keys
 * from `zone.json`), then the ledger row and any promotion — against a real store holding the
 * manifest's tasks; a sequence case first takes in the messages it names, in the same store. Any
 * difference is a false promotion or a false refusal.
 *
 * The second block covers the rules that rest on what the mailbox reports or the operator set
 * rather than on the bytes: a message over the size limit, a DKIM key lookup that fails
 * temporarily, and `mailbox.verify_dkim = false`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { REFUSED_RAW_KEEP_BYTES, TEMPORARY_RETRY_MS } from '../../../src/core/judge.js';
import type { Intake } from '../../../src/core/mail-check.js';
import type { DnsResolver } from '../../../src/uplink/dkim.js';
import { messageFacts } from '../../../src/uplink/gates.js';
import { isApplied, type Verdict } from '../../../src/uplink/verdicts.js';
import { corpusAgent, loadManifest, loadZone, profileOf, readMessage, zoneResolver } from '../../helpers/corpus.js';
import { corpusStore, type CorpusSetting, type CorpusStore } from '../../helpers/corpus-store.js';

const manifest = loadManifest();
const setting: CorpusSetting = {
  agents: [corpusAgent(manifest)],
  profile: profileOf(manifest),
  resolver: zoneResolver(loadZone().records),
  verifyDkim: true,
};

const counts = new Map<Verdict, number>();
const outcomes: { file: string; expected: Verdict; actual: Verdict }[] = [];

function recorded(i: Intake): Extract<Intake, { kind: 'recorded' }> {
  if (i.kind !== 'recorded') throw new Error(`expected a recorded verdict, got ${i.kind}`);
  return i;
}

describe('attack-mail corpus', () => {
  it('has at least 40 messages against one live task', () => {
    expect(manifest.messages.length).toBeGreaterThanOrEqual(40);
    expect(manifest.tasks.find((t) => t.id === manifest.liveTaskId)?.state).toBe('WORKING');
  });

  for (const m of manifest.messages) {
    it(m.file, async () => {
      const store = corpusStore(manifest, setting, m.task);
      try {
        for (const before of m.precededBy ?? []) await store.take(readMessage(before));
        const out = recorded(await store.take(readMessage(m.file)));
        counts.set(m.expect.verdict, (counts.get(m.expect.verdict) ?? 0) + 1);
        outcomes.push({ file: m.file, expected: m.expect.verdict, actual: out.verdict });
        expect({ verdict: out.verdict, reason: out.reason }).toEqual({
          verdict: m.expect.verdict,
          reason: m.expect.reason === undefined ? out.reason : (expect.stringContaining(m.expect.reason) as unknown),
        });
        const d = out.decision;
        for (const part of m.answerIncludes ?? []) expect(d.kind === 'refuse' ? undefined : d.reply.answer).toContain(part);
      } finally {
        store.close();
      }
    });
  }

  afterAll(() => {
    const falsePromotions = outcomes.filter((o) => isApplied(o.actual) && o.actual !== o.expected);
    const falseRefusals = outcomes.filter((o) => isApplied(o.expected) && o.actual !== o.expected);
    const other = outcomes.filter((o) => o.actual !== o.expected && !falsePromotions.includes(o) && !falseRefusals.includes(o));
    const table = [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([v, n]) => `  ${v.padEnd(26)} ${n}`);
    console.log(
      [
        `corpus: ${outcomes.length} messages judged; expected verdicts:`,
        ...table,
        `false promotions: ${falsePromotions.length}${falsePromotions.map((o) => `\n  ${o.file}: ${o.actual}`).join('')}`,
        `false refusals: ${falseRefusals.length}${falseRefusals.map((o) => `\n  ${o.file}: ${o.actual}`).join('')}`,
        `other mismatches: ${other.length}${other.map((o) => `\n  ${o.file}: ${o.actual}, expected ${o.expected}`).join('')}`,
      ].join('\n'),
    );
  });
});

/**
 * The header stage of a check (docs/architecture.md, "The header stage") judges each message on its
 * header block first: what it refuses must be refused with the verdict the whole message gets, and
 * what it lets through is then judged whole, as a check does. Every corpus message, each in a store
 * of its own (sequences take their predecessors in the same way first).
 */
describe('the header stage agrees with the whole judge', () => {
  /** Verdicts that need more than the header block: local verification, the task, the body. */
  const NEEDS_MORE = new Set(['auth:dkim-unverified', 'unknown-task', 'auth:date-window', 'duplicate', 'no-token', 'bad-token', 'task-closed', 'bad-status', 'late:recorded']);
  for (const m of manifest.messages) {
    it(m.file, async () => {
      const store = corpusStore(manifest, setting, m.task);
      try {
        for (const before of m.precededBy ?? []) {
          const raw = readMessage(before);
          if (store.takeHeaderBlock(raw) === null) await store.take(raw);
        }
        const raw = readMessage(m.file);
        const onHeaders = store.takeHeaderBlock(raw);
        if (onHeaders !== null) {
          expect(onHeaders).toBe(m.expect.verdict);
        } else {
          expect(isApplied(m.expect.verdict) || NEEDS_MORE.has(m.expect.verdict), `${m.expect.verdict} should be decided on the header block`).toBe(true);
          expect(recorded(await store.take(raw)).verdict).toBe(m.expect.verdict);
        }
      } finally {
        store.close();
      }
    });
  }
});

describe('what the mailbox reports', () => {
  const GENUINE = '01-genuine-done.eml';
  const UNTAGGED = manifest.messages.find((m) => m.expect.verdict === 'no-task-id')!.file;
  const judgedAt = Date.parse(manifest.judgedAt);

  /** A resolver whose every lookup times out, as when DNS cannot be reached. */
  const unreachable: DnsResolver = (name) => Promise.reject(Object.assign(new Error(`queryTxt ETIMEOUT ${name}`), { code: 'ETIMEOUT' }));

  it('refuses a genuine reply over the size limit whole, keeping the head of its bytes', async () => {
    const store = corpusStore(manifest, setting);
    try {
      const out = recorded(await store.take(readMessage(GENUINE), { tooLarge: true }));
      expect(out).toMatchObject({ verdict: 'too-large', reason: expect.stringContaining('over mailbox.max_message_bytes') as unknown });
      expect(out.decision).toMatchObject({ kind: 'refuse', evidence: 'head', tag: { taskId: manifest.liveTaskId } });
      expect(store.store.tasks.get(manifest.liveTaskId)?.state).toBe('WORKING');
    } finally {
      store.close();
    }
  });

  it('refuses untagged mail over the size limit as too-large, before gate 2', async () => {
    const store = corpusStore(manifest, setting);
    try {
      expect(recorded(await store.take(readMessage(UNTAGGED), { tooLarge: true })).verdict).toBe('too-large');
    } finally {
      store.close();
    }
  });

  it('calls a re-upload of the same bytes over the size limit a duplicate (gate 1 first)', async () => {
    const store = corpusStore(manifest, setting);
    try {
      await store.take(readMessage(GENUINE));
      expect(recorded(await store.take(readMessage(GENUINE), { tooLarge: true })).reason).toContain('gate 1');
    } finally {
      store.close();
    }
  });

  it('defers a genuine reply whose DKIM key lookup fails for 24 h after arrival, then refuses it', async () => {
    const store = corpusStore(manifest, { ...setting, resolver: unreachable });
    try {
      const arrived = judgedAt - 3600_000;
      expect(await store.take(readMessage(GENUINE), { receivedAt: arrived })).toMatchObject({ kind: 'deferred', reason: expect.stringContaining('gate 7') as unknown });
      expect(store.store.tasks.get(manifest.liveTaskId)?.state).toBe('WORKING');
      const late = recorded(await store.take(readMessage(GENUINE), { receivedAt: arrived, now: arrived + TEMPORARY_RETRY_MS }));
      expect(late).toMatchObject({ verdict: 'auth:dkim-unverified', reason: expect.stringContaining('still failing 24 h after arrival') as unknown });
    } finally {
      store.close();
    }
  });

  it('applies the deferred reply once DNS answers again', async () => {
    const store = corpusStore(manifest, setting);
    try {
      expect((await store.take(readMessage(GENUINE), { receivedAt: judgedAt, resolver: unreachable })).kind).toBe('deferred');
      expect(recorded(await store.take(readMessage(GENUINE), { receivedAt: judgedAt })).verdict).toBe('applied:done');
    } finally {
      store.close();
    }
  });

  it('without local verification, applies a reply only when the trusted dkim=pass names its signature by header.b', async () => {
    const unverified = { ...setting, verifyDkim: false };
    const named = readMessage(GENUINE);
    const bySelector = Buffer.from(named.toString('latin1').replace(/ header\.b=[A-Za-z0-9+/]{8,}/, ''), 'latin1');
    expect(bySelector.equals(named)).toBe(false);
    for (const [raw, verdict] of [[named, 'applied:done'], [bySelector, 'auth:dkim-unverified']] as const) {
      const store = corpusStore(manifest, unverified);
      try {
        expect(recorded(await store.take(raw)).verdict).toBe(verdict);
      } finally {
        store.close();
      }
    }
  });

  it('keeps the whole of an applied reply, the first 64 KiB of authenticated mail it refuses', async () => {
    const long = readMessage('13-genuine-long-answer.eml');
    expect(long.length).toBeGreaterThan(REFUSED_RAW_KEEP_BYTES);
    const replay = Buffer.concat([Buffer.from('X-Replayed: 1\r\n'), long]);
    const store = corpusStore(manifest, setting);
    const closed = corpusStore(manifest, setting, { state: 'COMPLETED', token: null });
    try {
      const applied = recorded(await store.take(long));
      const again = recorded(await store.take(replay));
      const refused = recorded(await closed.take(long));
      expect([applied.verdict, again.verdict, refused.verdict]).toEqual(['applied:done', 'duplicate', 'bad-token']);
      expect(store.store.ledger.raw(applied.ledgerId)?.length).toBe(long.length);
      expect(store.store.ledger.raw(again.ledgerId)?.length).toBe(REFUSED_RAW_KEEP_BYTES);
      expect(closed.store.ledger.raw(refused.ledgerId)?.length).toBe(REFUSED_RAW_KEEP_BYTES);
    } finally {
      store.close();
      closed.close();
    }
  });

  it('calls a reply a duplicate when another process records the same bytes while this one authenticates', async () => {
    const store = corpusStore(manifest, setting);
    const raw = readMessage(GENUINE);
    // The key lookup is where the judge waits; the other process commits its verdict meanwhile.
    const racing: DnsResolver = async (name, type) => {
      store.store.tx((tx) =>
        tx.ledger.record({
          source: 'imap:INBOX:7:1', seenAt: judgedAt, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: raw.length,
          rawSha256: messageFacts(raw).rawSha256, raw: null, agent: null, taskId: null, verdict: 'applied:done', reason: 'the other process',
        }),
      );
      return setting.resolver(name, type);
    };
    try {
      const out = recorded(await store.take(raw, { resolver: racing }));
      expect(out).toMatchObject({ verdict: 'duplicate', reason: expect.stringContaining('gate 1') as unknown });
      // Authenticated (it names its signature), but only an applied or late reply is kept whole.
      expect(out.decision).toMatchObject({ evidence: 'head', signature: expect.any(String) as unknown });
      expect(store.store.tasks.get(manifest.liveTaskId)?.state).toBe('WORKING');
    } finally {
      store.close();
    }
  });
});

/**
 * Where two gates would refuse a message, the earlier one names the verdict: the order is part of
 * the judge's contract (docs/architecture.md, "The gates"), so each pair of neighbouring gates
 * that could be swapped has a message that fails both.
 */
describe('the gate order', () => {
  const text = (file: string): string => readMessage(file).toString('latin1');
  const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');
  const withFirstField = (file: string, field: string): Buffer => bytes(`${field}\r\n${text(file)}`);

  async function verdictOf(raw: Buffer, live: Parameters<typeof corpusStore>[2] = {}): Promise<string> {
    const store = corpusStore(manifest, setting, live);
    try {
      return recorded(await store.take(raw)).verdict;
    } finally {
      store.close();
    }
  }

  it('gate 2 before gate 3: untagged mail with a second From is no-task-id', async () => {
    expect(await verdictOf(withFirstField('25-untagged-mail-from-agent.eml', 'From: Mallory <mallory@evil.example>'))).toBe('no-task-id');
  });

  it('gate 3 before gates 4 and 5: a second From on mail with no border hop is auth:duplicate-header', async () => {
    expect(await verdictOf(withFirstField('42-no-received-at-all.eml', 'From: Mallory <mallory@evil.example>'))).toBe('auth:duplicate-header');
  });

  it('gate 4 before gate 5: another From on mail with no border hop is auth:from-mismatch', async () => {
    const raw = bytes(text('42-no-received-at-all.eml').replace('From: Grok Agent <agent@agent.example>', 'From: Mallory <mallory@evil.example>'));
    expect(await verdictOf(raw)).toBe('auth:from-mismatch');
  });

  it('the Date window before gate 8a: a replayed Message-ID dated before the dispatch is auth:date-window', async () => {
    const raw = readMessage('01-genuine-done.eml');
    const f = messageFacts(raw);
    const live = { appliedMessageIds: [f.messageId!], dispatchedAt: new Date(Date.parse(f.date!) + 2 * manifest.dateSkewMs).toISOString() };
    expect(await verdictOf(raw, live)).toBe('auth:date-window');
  });

  it('gate 10 before gate 11: a bad status line to a task that is not open is task-closed', async () => {
    expect(await verdictOf(readMessage('91-bad-status-word.eml'), { state: 'REJECTED' })).toBe('task-closed');
  });

  /** The verdicts of `raws` taken in one after the other by one store. */
  async function verdictsOf(raws: Buffer[], o: Parameters<CorpusStore['take']>[1] = {}): Promise<string[]> {
    const store = corpusStore(manifest, setting);
    try {
      const out: string[] = [];
      for (const raw of raws) out.push(recorded(await store.take(raw, o)).verdict);
      return out;
    } finally {
      store.close();
    }
  }

  it('gate 1 by the digest before the header block, by signature after it: a copy of mail with a bare CR in its header block is a duplicate; a replay of an applied reply with one is unreadable:line-ends, its fields never parsed', async () => {
    const raw = withFirstField('01-genuine-done.eml', 'X-Note: a\rb');
    expect(await verdictsOf([raw, raw])).toEqual(['unreadable:line-ends', 'duplicate']);
    expect(await verdictsOf([readMessage('01-genuine-done.eml'), raw])).toEqual(['applied:done', 'unreadable:line-ends']);
  });

  it('gate 1 by signature before gate 3: a replay of an applied reply with a second From prepended is a duplicate', async () => {
    const genuine = readMessage('01-genuine-done.eml');
    expect(await verdictsOf([genuine, withFirstField('01-genuine-done.eml', 'From: Mallory <mallory@evil.example>')])).toEqual(['applied:done', 'duplicate']);
  });

  it('gate 1 by signature before the size limit: a replay over max_message_bytes is a duplicate', async () => {
    const store = corpusStore(manifest, setting);
    try {
      await store.take(readMessage('01-genuine-done.eml'));
      const again = recorded(await store.take(withFirstField('01-genuine-done.eml', 'X-Replayed: 1'), { tooLarge: true }));
      expect(again).toMatchObject({ verdict: 'duplicate', reason: expect.stringContaining('gate 1: the DKIM signature and Message-ID') as unknown });
    } finally {
      store.close();
    }
  });

  it('gate 1 by signature: a replay of authenticated mail that was refused, with a header added, is a duplicate, not refused again', async () => {
    // Authenticated, then refused at gate 9 (the token is another task's): the replay carries the
    // same signature and Message-ID, and an extra unsigned header so its bytes differ.
    const wrong = readMessage('86-wrong-token.eml');
    const replay = withFirstField('86-wrong-token.eml', 'X-Replayed: 1');
    expect(await verdictsOf([wrong, replay])).toEqual(['bad-token', 'duplicate']);
  });
});
