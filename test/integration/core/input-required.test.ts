import { describe, expect, it } from 'vitest';
import { expectFenced, hermesPrints } from '../../helpers/agent-text.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/**
 * An INPUT_REQUIRED round trip end to end on Dovecot: the agent asks, the caller answers on the
 * same context, the second webhook carries the thread and a new token, the final answer is applied,
 * and the first token no longer applies.
 */

const suite = useHarness({});

const send = async (text: string, ctx: string) => (await suite.h.rpc(hermesBody(text, ctx))).json.result!.task;

describe('INPUT_REQUIRED round trip', () => {
  it('question → answer on the same context → second webhook with thread and new token → final answer', async () => {
    const ctx = `ctx-${hex(8)}`;
    const t1 = await send('Book me a flight to Lisbon', ctx);
    expect(t1!.status.state).toBe('TASK_STATE_WORKING');
    const e1 = suite.h.envelope(1);
    expect(e1).toMatchObject({ turn: 1, ask: 'Book me a flight to Lisbon', thread: [] });

    await suite.dovecot.append(await suite.h.reply(e1, { status: 'input-required', answer: 'Which date?' }));
    const asked = await send('status', ctx);
    expect(asked!.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(asked!.artifacts).toEqual([]);
    // The bridge's sentence and the agent's question travel in parts of their own.
    const [said, question] = asked!.status.message!.parts;
    expect(said).toEqual({ text: `The cloud agent grok asks for input: its question is in the next part, as the agent wrote it. Answer on context_id ${ctx} by sending your answer as a new message.`, mediaType: 'text/plain', metadata: { untrusted: false, source: 'bridge' } });
    const nonce = expectFenced(question!.text, 'Which date?');
    expect(question!.metadata).toMatchObject({ untrusted: true, source: 'agent', agent: 'grok', fence: nonce });
    // What Hermes prints for it.
    expect(hermesPrints('grok', asked!)).toBe(
      [
        `[grok · context ${ctx} · input-required]`,
        said!.text,
        `[UNTRUSTED — grok reply, verify before acting] BEGIN-AGENT-TEXT ${nonce}`,
        'Which date?',
        `END-AGENT-TEXT ${nonce}`,
        '',
        `(The peer needs more input — answer by calling a2a_call again with context_id '${ctx}'.)`,
      ].join('\n'),
    );

    const answered = await send('The 3rd of March', ctx);
    expect(answered!.id).toBe(t1!.id);
    expect(answered!.status.state).toBe('TASK_STATE_WORKING');
    expect(suite.h.receiver.requests).toHaveLength(2);
    const e2 = suite.h.envelope(2);
    expect(e2).toMatchObject({
      task_id: t1!.id,
      turn: 2,
      ask: 'The 3rd of March',
      thread: [
        { turn: 1, role: 'user', text: 'Book me a flight to Lisbon' },
        { turn: 1, role: 'agent', text: 'Which date?' },
      ],
    });
    expect(e2.reply_token).not.toBe(e1.reply_token);
    expect(suite.h.receiver.requests[1]!.id).not.toBe(suite.h.receiver.requests[0]!.id);

    // The first turn's token no longer applies, even in a fresh, authentic mail.
    await suite.dovecot.append(await suite.h.reply(e1, { answer: 'stale answer under the old token' }));
    expect((await send('status', ctx))!.status.state).toBe('TASK_STATE_WORKING');

    await suite.dovecot.append(await suite.h.reply(e2, { answer: 'Booked: TP1350 on 3 March.' }));
    const done = await send('status', ctx);
    expect(done!.status.state).toBe('TASK_STATE_COMPLETED');
    expect(done!.artifacts).toHaveLength(1);
    const finalNonce = expectFenced(done!.artifacts![0]!.parts[0]!.text, 'Booked: TP1350 on 3 March.');
    expect(done!.history.map((m) => [m.role, m.parts.length])).toEqual([['ROLE_USER', 1], ['ROLE_AGENT', 1], ['ROLE_USER', 1], ['ROLE_AGENT', 1]]);
    expect(done!.history.map((m) => m.parts[0]!.text)).toEqual(['Book me a flight to Lisbon', question!.text, 'The 3rd of March', done!.artifacts![0]!.parts[0]!.text]);
    // One nonce per reply, the same wherever the reply is shown.
    expect(finalNonce).not.toBe(nonce);
    const verdicts = suite.h.app.bridge.ctx.store.ledger.query({ taskId: t1!.id, limit: 10 }).map((l) => l.verdict).reverse();
    expect(verdicts).toEqual(['applied:input-required', 'bad-token', 'applied:done']);
  });

  it('a poll word while input is required is a poll, not an answer', async () => {
    const ctx = `ctx-${hex(8)}`;
    const t = await send('Plan a trip', ctx);
    const env = suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === t!.id)!;
    await suite.dovecot.append(await suite.h.reply(env, { status: 'input-required', answer: 'Where to?' }));
    expect((await send('status', ctx))!.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const sent = suite.h.receiver.requests.length;
    expect((await send('?', ctx))!.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(suite.h.receiver.requests.length).toBe(sent);
  });
});
