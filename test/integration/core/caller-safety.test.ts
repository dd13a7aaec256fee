import { describe, expect, it } from 'vitest';
import { DEFER_FIRST_WAIT_MS } from '../../../src/core/deferrals.js';
import { makeResolver } from '../../../src/uplink/dkim.js';
import { expectFenced } from '../../helpers/agent-text.js';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';

/** Findings of the second hostile trial: nothing the agent sent may be lost or hidden from the caller. */

const suite = useHarness({});

const send = async (text: string, ctx: string) => (await suite.h.rpc(hermesBody(text, ctx))).json.result!.task;
const envelopeOf = (taskId: string) => suite.h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === taskId)!;

describe('nothing the agent sent is lost or hidden', () => {
  it('a DKIM key lookup that fails for a while (DNS down) defers the reply instead of refusing it for good', async () => {
    const ctx = `ctx-${hex(8)}`;
    const task = await send('Job during a DNS outage', ctx);
    const working = suite.h.app.bridge.ctx.dkimResolver;
    suite.h.app.bridge.ctx.dkimResolver = makeResolver(['127.0.0.1:1'], { timeoutMs: 500 });
    await suite.dovecot.append(await suite.h.reply(envelopeOf(task!.id), { answer: 'Done despite DNS.' }));
    const during = await send('status', ctx);
    expect(during!.status.state).toBe('TASK_STATE_WORKING');
    expect(during!.status.message!.parts[0]!.text).toMatch(/A reply for this task could not be authenticated yet \(gate 7: local DKIM verification hit a temperror/);
    // One agent's DNS is not the mailbox's: the check went on, and no caller is told it is unreachable (attack review 6, F3).
    expect(during!.status.message!.parts[0]!.text).not.toContain('unreachable');
    // The selector is the agent's choice: the status names no part of the signature (docs/agent-text.md).
    expect(during!.status.message!.parts[0]!.text).not.toContain('s=test2026');
    expect(suite.h.app.bridge.ctx.store.ledger.query({ taskId: task!.id, limit: 5 })).toEqual([]);
    const health = (await (await fetch(`${new URL(suite.h.endpoint).origin}/health`)).json()) as { mailbox: { lastError: string } };
    expect(health.mailbox.lastError).toBeNull();

    suite.h.app.bridge.ctx.dkimResolver = working;
    suite.h.advance(DEFER_FIRST_WAIT_MS); // it is tried again once its backoff ran out (src/core/deferrals.ts)
    const after = await send('status', ctx);
    expect(after!.status.state).toBe('TASK_STATE_COMPLETED');
    expect(after!.artifacts![0]!.parts[0]!.text).toContain('Done despite DNS.');
    expect(suite.h.app.bridge.ctx.store.ledger.query({ taskId: task!.id, limit: 5 }).map((l) => l.verdict)).toEqual(['applied:done']);
  });

  it('a result applied by another call is shown to its caller first, whatever the text, and starts no new work', async () => {
    const [c1, c2] = [`ctx-${hex(8)}`, `ctx-${hex(8)}`];
    const t1 = await send('First job', c1);
    await send('Second job', c2);
    await suite.dovecot.append(await suite.h.reply(envelopeOf(t1!.id), { answer: 'First answer.' }));
    // The poll on c2 runs the shared mailbox check, which completes t1.
    expect((await send('status', c2))!.status.state).toBe('TASK_STATE_WORKING');
    const sent = suite.h.receiver.requests.length;
    const shown = await send('Any update?', c1);
    expect(shown!.id).toBe(t1!.id);
    expect(shown!.status.state).toBe('TASK_STATE_COMPLETED');
    expect(shown!.artifacts![0]!.parts[0]!.text).toContain('First answer.');
    expect(shown!.status.message!.parts[0]!.text).toMatch(/^Your message was not sent to grok: this task had finished, and this is its result\. Send your message again to start a new task\.$/);
    expect(suite.h.receiver.requests.length).toBe(sent);
    // Once shown, new text on the context is new work, as before.
    const next = await send('Any update?', c1);
    expect(next!.id).not.toBe(t1!.id);
    expect(suite.h.receiver.requests.length).toBe(sent + 1);
  });

  it('an answer is never cut silently: quoted text after it is counted in a note', async () => {
    const ctx = `ctx-${hex(8)}`;
    const task = await send('Quote me', ctx);
    const body = `reply_token: ${envelopeOf(task!.id).reply_token}\nstatus: done\n---\nThe answer.\n\n> a Markdown quote that belongs to it\n\nOn Mon, 30 Nov 2026 at 10:00, me@bridge.test wrote:\n> Quote me\n`;
    await suite.dovecot.append(await suite.h.reply(envelopeOf(task!.id), { body }));
    const done = await send('status', ctx);
    const text = done!.artifacts![0]!.parts[0]!.text;
    expectFenced(text, 'The answer.\n\n> a Markdown quote that belongs to it');
    expect(done!.artifacts![0]!.parts[1]).toEqual({
      text: expect.stringMatching(/^The bridge left out 2 lines after the answer as quoted text or a signature; a2a-mailbridge --config \S+ ledger --raw \d+ shows the whole mail\.$/) as unknown,
      mediaType: 'text/plain',
      metadata: { untrusted: false, source: 'bridge', ledgerId: expect.any(Number) as unknown },
    });
  });
});
