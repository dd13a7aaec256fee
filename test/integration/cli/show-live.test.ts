import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerJson } from '../../../src/cli/ledger.js';
import type { showJson } from '../../../src/cli/show.js';
import { Store } from '../../../src/store/store.js';
import { hermesBody, hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { runCli } from '../../helpers/cli.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';

/**
 * `show`, `ledger` and `backup` against the store of a running bridge after a real round trip
 * (Dovecot, a signed webhook, a DKIM-signed reply): the read commands work beside the writer,
 * and every gap of the turn is measured.
 */
let dovecot: DovecotHandle;
let h: Harness;
let taskId: string;

beforeAll(async () => {
  dovecot = await startDovecot();
  h = await startHarness({ dovecot });
  const ctx = `ctx-${hex(8)}`;
  const first = await h.rpc(hermesBody('Survey RAG papers', ctx));
  taskId = first.json.result!.task!.id;
  expect(first.json.result!.task!.status.state).toBe('TASK_STATE_WORKING');
  await dovecot.append(await h.reply(h.envelope(1), { answer: 'Three papers.' }));
  const second = await h.rpc(hermesBody('status', ctx));
  expect(second.json.result!.task!.status.state).toBe('TASK_STATE_COMPLETED');
});
afterAll(async () => {
  await h?.close();
  await dovecot?.stop();
});

describe('read commands on a live store', () => {
  it('show measures dispatch → accepted → mail Date → seen → promoted for a real round trip', async () => {
    const store = h.config.store.path;
    const j = await runCli(['show', taskId, '--db', store, '--json']);
    expect(j.status, j.stderr).toBe(0);
    const shown = JSON.parse(j.stdout) as ReturnType<typeof showJson>;
    expect(shown.task).toMatchObject({ id: taskId, state: 'COMPLETED' });
    expect(shown.attempts).toMatchObject([{ attempt: 1, outcome: 'accepted', httpStatus: 202 }]);
    expect(shown.ledger.map((l: { verdict: string }) => l.verdict)).toEqual(['applied:done']);
    const [g] = shown.gapsMs;
    for (const k of ['dispatchToAccepted', 'acceptedToMailDate', 'mailDateToSeen', 'seenToPromoted', 'dispatchToPromoted'] as const) {
      expect(typeof g![k], k).toBe('number');
    }
    expect(g!.dispatchToAccepted).toBeGreaterThanOrEqual(0);
    // The mail Date has whole seconds: it may read up to a second before the webhook's 2xx.
    expect(g!.acceptedToMailDate).toBeGreaterThan(-1000);
    expect(g!.mailDateToSeen).toBeGreaterThan(-1000);
    expect(g!.seenToPromoted).toBeGreaterThanOrEqual(0);
    expect(shown.timeline.map((e: { kind: string }) => e.kind)).toEqual(['created', 'turn', 'attempt', 'state', 'mail', 'state', 'audit']);

    const text = await runCli(['--config', h.configDir.configPath, 'show', taskId]);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/webhook attempt 1 \(turn 1\) was accepted \(HTTP 202\)/);
    expect(text.stdout).toMatch(/mail #\d+ applied:done/);
    expect(text.stdout).toMatch(/mail Date → mail seen\s+-?\d/);
  });

  it('ledger --task lists the applied reply; backup copies the live store', async () => {
    const store = h.config.store.path;
    const l = await runCli(['ledger', '--db', store, '--task', taskId, '--json']);
    expect((JSON.parse(l.stdout) as LedgerJson[]).map((r) => r.verdict)).toEqual(['applied:done']);
    const dir = mkdtempSync(join(tmpdir(), 'mb-live-backup-'));
    const target = join(dir, 'copy.sqlite');
    const b = await runCli(['backup', '--db', store, target]);
    expect(b.status, b.stderr).toBe(0);
    const copy = Store.open(target, { readOnly: true });
    expect(copy.tasks.get(taskId)?.state).toBe('COMPLETED');
    copy.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
