/**
 * The ledger row of mail refused before it authenticated keeps each header value it names
 * (Message-ID, From, Subject, Date) cut at 998 characters (src/core/apply-reply.ts
 * `KEPT_FIELD_CHARS`; attack review 8: 15 KB Message-IDs made the store 2.3 times the forged mail,
 * half of it the index of a task's rows); a row gates 1 and 8a read keeps them whole.
 */
import { describe, expect, it } from 'vitest';
import { KEPT_FIELD_CHARS, recordDecision } from '../../../src/core/apply-reply.js';
import type { Decision } from '../../../src/core/judge.js';
import { Store } from '../../../src/store/store.js';
import { messageFacts } from '../../../src/uplink/gates.js';

const long = (c: string): string => c.repeat(15_000);
const raw = Buffer.from(`From: ${long('f')}@forger.test\r\nSubject: ${long('s')}\r\nDate: ${long('d')}\r\nMessage-ID: <${long('m')}@forger.test>\r\n\r\nbody\r\n`);

function refusal(signature: string | null): Exclude<Decision, { kind: 'defer' }> {
  return { kind: 'refuse', verdict: signature ? 'bad-token' : 'auth:no-border', reason: 'test', message: messageFacts(raw, raw.length), tag: null, evidence: 'head', signature };
}

describe('header values a ledger row keeps', () => {
  it('mail refused before it authenticated: each cut at KEPT_FIELD_CHARS; mail that authenticated: whole', () => {
    const store = Store.open(':memory:');
    const forged = store.tx((tx) => recordDecision(tx, refusal(null), { source: 'test:1', raw, receivedAt: null, at: 1000 }))!;
    const signed = store.tx((tx) => recordDecision(tx, refusal('c2lnbmVk'), { source: 'test:2', raw, receivedAt: null, at: 1000 }))!;
    const row = (id: number) => store.ledger.row(id)!;
    for (const k of ['messageId', 'fromHeader', 'subject', 'dateHeader'] as const) {
      expect(row(forged)[k]!.length, k).toBe(KEPT_FIELD_CHARS);
      expect(row(signed)[k]!.length, k).toBeGreaterThanOrEqual(15_000);
    }
    expect(row(forged).messageId).toBe(`<${'m'.repeat(KEPT_FIELD_CHARS - 1)}`);
    expect(store.ledger.raw(forged)!.subarray(0, raw.length)).toEqual(raw);
  });
});
