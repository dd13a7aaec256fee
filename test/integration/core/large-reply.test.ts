import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { V1Task } from '../../../src/a2a/wire.js';
import { LARGE_VALUE_CHUNK } from '../../../src/store/large-values.js';
import { expectFenced } from '../../helpers/agent-text.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * A large reply on Dovecot (src/store/large-values.ts): its raw message and its answer are written
 * in bounded steps before the decision that refers to them — the caller reads the whole answer,
 * `ledger --raw` and `doctor` the exact bytes; a large reply refused after it authenticated leaves
 * nothing behind; what a stop left between the writing and the decision is deleted at start.
 */
const suite = useHarness({ mailboxToml: 'max_message_bytes = 8388608' });
const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

async function call(text: string, contextId: string): Promise<V1Task> {
  const r = await suite.h.rpc(hermesBody(text, contextId));
  expect(r.status).toBe(200);
  return r.json.result!.task!;
}

/** An answer of `n` lines, past the large-value size, with a character outside the BMP on each line. */
const answerOf = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i} of the answer 📈`).join('\n');

describe('a large reply', () => {
  it('is applied whole: the caller reads the whole answer, the ledger the exact raw bytes', async () => {
    const { h, dovecot } = suite;
    const ctx = `ctx-${hex(8)}`;
    const task = await call('Write the long report', ctx);
    const answer = answerOf(40_000); // ≈ 1 MiB
    expect(answer.length).toBeGreaterThan(2 * LARGE_VALUE_CHUNK);
    const raw = await h.reply(h.envelope(1), { answer });
    await dovecot.append(raw);
    // A call waits for a check at most mailbox.check_wait_ms: wait for one that starts after the APPEND.
    await h.app.bridge.checkAfterChange();

    const done = await call('status', ctx);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expectFenced(done.artifacts![0]!.parts[0]!.text, answer);
    const store = h.app.bridge.ctx.store;
    const [row] = store.ledger.ofTask(task.id);
    expect(row).toMatchObject({ verdict: 'applied:done', rawSha256: sha(raw) });
    expect(sha(store.ledger.raw(row!.id)!)).toBe(sha(raw));
    expect(store.turns.get(task.id, 1)?.replyText).toBe(answer);
    expect(store.largeValues.orphans(Infinity)).toEqual({ count: 0, size: 0 });
  });

  it('refused after it authenticated (a token that is not the live one) leaves no large value behind', async () => {
    const { h, dovecot } = suite;
    const ctx = `ctx-${hex(8)}`;
    const task = await call('Another long report', ctx);
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === task.id)!;
    await dovecot.append(await h.reply({ ...env, reply_token: 'f'.repeat(32) }, { answer: answerOf(40_000) }));
    await h.app.bridge.checkAfterChange();
    const after = await call('status', ctx);
    expect(after.status.state).toBe('TASK_STATE_WORKING');
    const store = h.app.bridge.ctx.store;
    expect(store.ledger.ofTask(task.id).map((r) => r.verdict)).toEqual(['bad-token']);
    expect(store.largeValues.orphans(Infinity)).toEqual({ count: 0, size: 0 });
  });

  it('a value a stop left between its writing and the decision is deleted at start', async () => {
    const { h } = suite;
    await h.app.bridge.ctx.store.writeLargeValue(Buffer.alloc(3 * LARGE_VALUE_CHUNK, 0x61), h.app.bridge.ctx.now() - 1);
    expect(h.app.bridge.ctx.store.largeValues.orphans(Infinity).count).toBe(1);
    await h.restart();
    expect(h.app.bridge.ctx.store.largeValues.orphans(Infinity)).toEqual({ count: 0, size: 0 });
  });
});
