import { execFileSync } from 'node:child_process';
import { closeSync, cpSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HealthJson } from '../../../src/a2a/health.js';
import { hermesBody, useHarnesses } from '../../helpers/bridge-harness.js';
import { newContext } from './caller-view.js';

/**
 * The store on a small file system that fills up (a 3 MiB tmpfs mounted over the config's state/
 * folder): the bridge's SQLite gets SQLITE_FULL. Needs root (mount); skipped otherwise.
 */
const suite = useHarnesses();

function canMount(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'mb-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes a file into `dir` until the file system has no space left; returns its path. */
function fill(dir: string): string {
  const f = join(dir, 'filler');
  const fd = openSync(f, 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
  return f;
}

describe('a full disk under the store', () => {
  it.skipIf(!canMount())('calls are told the store cannot be written and /health is degraded (it said ok); no webhook for an unstored task; a reply waiting is applied once space returns', async () => {
    const h = await suite.start({ respond: () => ({ status: 202 }), mailboxToml: 'check_interval_s = 0' });
    const state = join(h.configDir.dir, 'state');
    const health = async (): Promise<HealthJson> => (await (await fetch(`${new URL(h.endpoint).origin}/health`)).json()) as HealthJson;
    await h.app.close();
    const keep = mkdtempSync(join(tmpdir(), 'mb-state-'));
    cpSync(state, keep, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', state]);
    try {
      cpSync(keep, state, { recursive: true });
      await h.restart();
      const a = (await h.rpc(hermesBody('job A', newContext()))).json.result!.task!;
      expect(a.status.state).toBe('TASK_STATE_WORKING');
      const filler = fill(state);
      const webhooks = h.receiver.requests.length;

      const b = await h.rpc(hermesBody('job B', newContext()));
      expect(b.json.error).toMatchObject({ code: -32603 });
      expect(b.json.error!.message).toMatch(/^The bridge could not write its store \(SQLITE_FULL: .+\)\. Call again once its operator has freed disk space; GET \/health shows the error\.$/);
      expect(h.receiver.requests.length).toBe(webhooks);
      const full = await health();
      expect(full.status).toBe('degraded');
      expect(full.store).toMatchObject({ ok: false, writeError: expect.stringMatching(/^SQLITE_FULL: /) as unknown });

      // The agent's reply lands while the disk is full: it gets no verdict and stays unread.
      await suite.dovecot.append(await h.reply(h.envelope(1), { answer: 'Answer A.' }));
      await h.rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: a.id } });
      await h.app.bridge.idle();
      expect(h.app.bridge.ctx.store.ledger.ofTask(a.id)).toEqual([]);

      rmSync(filler);
      await h.rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: a.id } });
      await h.app.bridge.idle();
      const done = await h.rpc({ jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: a.id } });
      expect(done.json.result!.status.state).toBe('TASK_STATE_COMPLETED');
      expect(h.app.bridge.ctx.store.ledger.ofTask(a.id).map((r) => r.verdict)).toEqual(['applied:done']);
      const back = await health();
      expect(back.store).toMatchObject({ ok: true, writeError: null, writeErrorSince: null });
      expect(back.status).toBe('ok');
    } finally {
      execFileSync('umount', ['-l', state]); // lazily: the bridge's open files stay valid until the harness closes it
      rmSync(keep, { recursive: true, force: true });
    }
  });
});
