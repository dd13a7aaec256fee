import { describe, expect, it } from 'vitest';
import { hermesBody, hex, useHarness } from '../../helpers/bridge-harness.js';
import { pruneAll } from '../../helpers/run-prune.js';

/**
 * `prune` on a store whose mailbox is IMAP, then a restart on the same store: the rows pruned are
 * deleted, not kept thin — the UID watermark passes their messages, so the new bridge lists none of
 * them again (docs/architecture.md, "Retention and the Maildir"). No reply is applied twice.
 */
const suite = useHarness({});

describe('prune on IMAP, then a restart', () => {
  it('deletes the pruned rows; no message is listed or judged again, no row added, no reply applied twice', async () => {
    const { h, dovecot } = suite;
    const store = () => h.app.bridge.ctx.store;
    const task = async (text: string) => {
      const ctx = `ctx-${hex(8)}`;
      const id = (await h.rpc(hermesBody(text, ctx))).json.result!.task!.id;
      return { id, ctx, envelope: h.receiver.requests.map((r) => r.envelope!).find((e) => e.task_id === id)! };
    };
    const [a, b] = [await task('Job A'), await task('Job B')];
    await dovecot.append(await h.reply(a.envelope, { answer: 'Answer A.' }));
    await dovecot.append(await h.reply(a.envelope, { answer: 'Forged.', from: 'Grok Agent <agent@attacker.example>' }));
    // B stays open (a progress note: its token still valid, so a second application would be taken).
    await dovecot.append(await h.reply(b.envelope, { answer: 'Still on it.', status: 'working' }));
    await h.app.bridge.checkNow();
    expect((await h.rpc(hermesBody('status', a.ctx))).json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
    expect((await h.rpc(hermesBody('status', b.ctx))).json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
    expect(store().ledger.query({ limit: 100 })).toHaveLength(3);
    const bRows = store().ledger.ofTask(b.id);

    const planned = await pruneAll(h.configDir.configPath, true);
    expect(planned).toMatchObject({ tasks: 1, ledger: 2, ledgerThinned: 0 });
    expect(await pruneAll(h.configDir.configPath, false)).toEqual(planned);

    await h.restart();
    expect((await h.app.bridge.checkNow()).fetched).toBe(0);
    expect(store().ledger.query({ limit: 100 })).toEqual(bRows.map((r) => expect.objectContaining({ id: r.id, verdict: 'applied:working' }) as unknown));
    expect(store().replies.ofTask(b.id)).toHaveLength(1);
    expect((await h.rpc(hermesBody('status', b.ctx))).json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
  });
});
