import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { judgeMessage, type JudgeStore } from '../../../src/core/judge.js';
import { DIGEST_SLICE_BYTES, sha256Sliced } from '../../../src/uplink/digest.js';
import { FASTMAIL_PROFILE } from '../../../src/uplink/border.js';
import { turnCounter } from '../../helpers/event-loop.js';

describe('sha256Sliced: the digest of a large message, a slice at a time', () => {
  it('equals the one-piece SHA-256 at any size, slice boundaries included', async () => {
    for (const size of [0, 1, 7, 8, 9, 64]) {
      const raw = Buffer.from(Array.from({ length: size }, (_, i) => (i * 31) % 256));
      expect(await sha256Sliced(raw, 8)).toBe(createHash('sha256').update(raw).digest('hex'));
    }
  });

  it('lets the event loop turn between slices', async () => {
    const raw = Buffer.alloc(4 * DIGEST_SLICE_BYTES, 0x61);
    const counter = turnCounter();
    const digest = await sha256Sliced(raw);
    counter.stop();
    expect(digest).toBe(createHash('sha256').update(raw).digest('hex'));
    expect(counter.turns()).toBeGreaterThanOrEqual(3);
  });
});

describe('judgeMessage on a large message', () => {
  it('lets the event loop turn while the message is hashed, before gate 1 reads the store', async () => {
    const raw = Buffer.concat([Buffer.from('From: a@agent.example\r\nSubject: no tag\r\n\r\n'), Buffer.alloc(3 * DIGEST_SLICE_BYTES, 0x61)]);
    const counter = turnCounter();
    let turnsAtGate1 = -1;
    const store: JudgeStore = {
      seenDigest: () => ((turnsAtGate1 = counter.turns()), false),
      authenticatedWith: () => undefined,
      task: () => undefined,
      messageIdApplied: () => false,
    };
    const d = await judgeMessage(
      { raw, size: raw.length, tooLarge: false, receivedAt: null },
      { rules: { agents: [], profile: FASTMAIL_PROFILE, verifyDkim: true, dateSkewMs: 0, maxMessageBytes: raw.length }, resolver: () => Promise.reject(new Error('no DNS here')), now: () => 0, store, settle: (decide) => decide() },
    );
    counter.stop();
    expect(d).toMatchObject({ kind: 'refuse', verdict: 'no-task-id', message: { rawSha256: createHash('sha256').update(raw).digest('hex') } });
    expect(turnsAtGate1).toBeGreaterThanOrEqual(2);
  });
});
