import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_ROWS_WITH_POLLS, POLL_TEXT_KEEP } from '../../../src/core/submit.js';
import { agentAsks, send, submitContext } from '../../helpers/submit-context.js';

/** Follow-ups on an open task (polls) are answered, and what they store is bounded: a poll's text start, and rows up to the task's cap. */
describe('polls store a bounded row', () => {
  it('keeps a poll’s first characters with its size and digest; the history is unchanged; a replay is still known', () => {
    const ctx = submitContext();
    const first = send(ctx, 'long job');
    if (first.kind !== 'new') throw new Error(first.kind);
    const big = `${'a'.repeat(POLL_TEXT_KEEP - 1)}😀${'é'.repeat(500_000)}`;
    const out = send(ctx, big, 'poll-1');
    expect(out).toMatchObject({ kind: 'poll', ignoredText: 'open' });
    const row = ctx.store.messages.byId('grok', 'poll-1')!;
    // The emoji is two UTF-16 units across the cap: it is left out whole, not cut in half.
    expect([row.kind, row.text, row.textBytes, row.contentSha256]).toEqual(['poll', 'a'.repeat(POLL_TEXT_KEEP - 1), Buffer.byteLength(big), `sha-poll-1-${big.length}`]);
    const small = send(ctx, 'any news?', 'poll-2');
    expect(small.kind).toBe('poll');
    expect(ctx.store.messages.byId('grok', 'poll-2')).toMatchObject({ text: 'any news?', textBytes: null });
    expect(send(ctx, big, 'poll-1').kind).toBe('replay');
    expect(ctx.store.messages.history(first.task.id).map((m) => m.text)).toEqual(['long job']);
  });

  it('past the task’s cap of message rows a poll is answered, counted and not stored; an answer is still stored', () => {
    const ctx = submitContext();
    const first = send(ctx, 'long job');
    if (first.kind !== 'new') throw new Error(first.kind);
    const id = first.task.id;
    for (let i = 1; i < MAX_MESSAGE_ROWS_WITH_POLLS; i++) send(ctx, 'status?');
    expect(ctx.store.messages.countOfTask(id)).toBe(MAX_MESSAGE_ROWS_WITH_POLLS);
    expect(send(ctx, 'status?', 'past-cap')).toMatchObject({ kind: 'poll', task: { id } });
    expect(send(ctx, 'status?', 'past-cap-2').kind).toBe('poll');
    expect(ctx.store.messages.byId('grok', 'past-cap')).toBeUndefined();
    expect([ctx.store.messages.countOfTask(id), ctx.store.messages.unstoredPolls(id)]).toEqual([MAX_MESSAGE_ROWS_WITH_POLLS, 2]);
    agentAsks(ctx, id, 'Which date?');
    expect(send(ctx, 'The 3rd', 'answer').kind).toBe('answer');
    expect(ctx.store.messages.byId('grok', 'answer')).toMatchObject({ kind: 'ask', text: 'The 3rd' });
  });
});
