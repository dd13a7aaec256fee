import { describe, expect, it } from 'vitest';
import { hermesBody, useHarnesses } from '../../helpers/bridge-harness.js';
import { newContext, statusMessage } from './caller-view.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import { iso } from '../../../src/core/time.js';

/**
 * The time a SUBMITTED task's status text gives for the next webhook attempt is the time the
 * next attempt really runs, on the injected clock: never the lease of an attempt still in
 * flight (timeout + 30 s), which a caller of `returnImmediately` used to be told.
 */
const suite = useHarnesses();

const sentence = (t: V1Task | undefined): string | undefined => /Next attempt at (\S+Z)\./.exec(statusMessage(t))?.[1];

describe('the next attempt time in the status text', () => {
  it('returnImmediately while attempt 1 is in flight: no "Next attempt at" (the lease is no schedule); after it failed, the time stated is when attempt 2 runs', async () => {
    const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 3600', frozenClock: true });
    await h.receiver.close(); // every attempt: ECONNREFUSED, retried with backoff
    const ctx = newContext();
    const body = hermesBody('Summarise the report', ctx);
    const first = await h.rpc({ ...body, params: { ...body.params, configuration: { returnImmediately: true } } });
    const task = first.json.result!.task!;
    expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
    // The answer is built once attempt 1 is claimed (its row and lease committed), before its POST ends.
    expect(statusMessage(task)).toMatch(/^The webhook to grok is being delivered \(attempt 1, started \S+Z; it times out at \S+Z\)\. Deadline/);
    expect(sentence(task)).toBeUndefined();
    await h.app.bridge.idle();
    const store = h.app.bridge.ctx.store;
    const [a1] = store.attempts.ofTask(task.id);
    expect(a1).toMatchObject({ attempt: 1, outcome: 'retry' });

    const poll = (await h.rpc(hermesBody('status', ctx))).json.result!.task!;
    const scheduled = store.turns.get(task.id, 1)!.nextAttemptAt!;
    expect(scheduled).toBeGreaterThan(a1!.finishedAt!);
    expect(sentence(poll)).toBe(iso(scheduled));
    // One ms before the schedule a poll sends nothing; at it, attempt 2 runs, at the stated time.
    const due = async (): Promise<void> => {
      await h.rpc(hermesBody('status', ctx));
      await h.app.bridge.idle();
    };
    h.advance(scheduled - 1 - h.app.bridge.ctx.now());
    await due();
    expect(store.attempts.ofTask(task.id)).toHaveLength(1);
    h.advance(scheduled - h.app.bridge.ctx.now());
    await due();
    const rows = store.attempts.ofTask(task.id);
    expect(rows).toHaveLength(2);
    expect(iso(rows[1]!.startedAt)).toBe(sentence(poll));
  });
});
