import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { showJson } from '../../../src/cli/show.js';
import type { StatusReport } from '../../../src/cli/status.js';
import type { TaskJson } from '../../../src/cli/tasks.js';
import { hermesBody, hex, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { runCli } from '../../helpers/cli.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';

/**
 * The read commands and prune on a task the agent declined (`status: rejected`), against the
 * store of a running bridge after a real round trip (Dovecot, a signed webhook, a DKIM-signed
 * reply): `tasks --state rejected`, `show`, `status`, and `prune`, which takes REJECTED as finished.
 */
let dovecot: DovecotHandle;
let h: Harness;
let rejectedId: string;
let workingId: string;

beforeAll(async () => {
  dovecot = await startDovecot();
  h = await startHarness({ dovecot });
  const ctx = `ctx-${hex(8)}`;
  const first = await h.rpc(hermesBody('Write my exam essay', ctx));
  rejectedId = first.json.result!.task!.id;
  await dovecot.append(await h.reply(h.envelope(1), { status: 'rejected', answer: 'I do not write graded work for students.' }));
  const second = await h.rpc(hermesBody('status', ctx));
  expect(second.json.result!.task!.status.state).toBe('TASK_STATE_REJECTED');
  workingId = (await h.rpc(hermesBody('Summarise the news', `ctx-${hex(8)}`))).json.result!.task!.id;
});
afterAll(async () => {
  await h?.close();
  await dovecot?.stop();
});

describe('the CLI on a REJECTED task', () => {
  it('tasks --state rejected (and finished) lists it; open does not', async () => {
    const db = h.config.store.path;
    const listed = async (state: string): Promise<[string, string][]> => {
      const r = await runCli(['tasks', '--db', db, '--state', state, '--json']);
      expect(r.status, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as TaskJson[]).map((t) => [t.id, t.state]);
    };
    expect(await listed('rejected')).toEqual([[rejectedId, 'REJECTED']]);
    expect(await listed('TASK_STATE_REJECTED,completed')).toEqual([[rejectedId, 'REJECTED']]);
    expect(await listed('finished')).toEqual([[rejectedId, 'REJECTED']]);
    expect(await listed('open')).toEqual([[workingId, 'WORKING']]);
    const text = await runCli(['tasks', '--db', db, '--state', 'rejected']);
    expect(text.stdout).toContain(rejectedId.slice(0, 8));
    expect(text.stdout).toMatch(/REJECTED\s+.*the agent declined the task in reply \(ledger #\d+\)/);
  });

  it('show: the state, the applied:rejected verdict, the audit entry; status counts it among the finished', async () => {
    const db = h.config.store.path;
    const j = await runCli(['show', rejectedId, '--db', db, '--json']);
    expect(j.status, j.stderr).toBe(0);
    const shown = JSON.parse(j.stdout) as ReturnType<typeof showJson>;
    expect(shown.task).toMatchObject({ id: rejectedId, state: 'REJECTED', failedBy: null, deadlineAt: null });
    expect(shown.ledger.map((l: { verdict: string }) => l.verdict)).toEqual(['applied:rejected']);
    expect(shown.timeline.map((e: { kind: string }) => e.kind)).toEqual(['created', 'turn', 'attempt', 'state', 'mail', 'state', 'audit']);
    const text = await runCli(['--config', h.configDir.configPath, 'show', rejectedId]);
    expect(text.stdout).toMatch(/^state {5}REJECTED: the agent declined the task in reply \(ledger #\d+\)$/m);
    expect(text.stdout).toMatch(/mail #\d+ applied:rejected/);
    expect(text.stdout).toMatch(/WORKING → REJECTED: the agent declined the task/);

    const s = await runCli(['--config', h.configDir.configPath, 'status', '--json']);
    const report = JSON.parse(s.stdout) as StatusReport;
    expect(report.tasks).toEqual({ open: 1, finished: 1, byState: { WORKING: 1, REJECTED: 1 } });
    const human = await runCli(['--config', h.configDir.configPath, 'status']);
    expect(human.stdout).toContain('tasks     1 open (0 SUBMITTED, 1 WORKING, 0 INPUT_REQUIRED); 1 finished (0 COMPLETED, 0 FAILED, 0 CANCELED, 1 REJECTED)');
  });

  it('prune takes it as finished: counted by --dry-run, then deleted with its rows; the open task stays', async () => {
    const db = h.config.store.path;
    const dry = await runCli(['prune', '--db', db, '--older-than', '0', '--dry-run', '--json']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, tasks: 1, turns: 1, replies: 1 });
    const done = await runCli(['prune', '--db', db, '--older-than', '0', '--json']);
    expect(JSON.parse(done.stdout)).toMatchObject({ dryRun: false, tasks: 1, turns: 1, replies: 1 });
    const left = await runCli(['tasks', '--db', db, '--json']);
    expect((JSON.parse(left.stdout) as TaskJson[]).map((t) => t.id)).toEqual([workingId]);
    // The audit entry outlives the task (docs/architecture.md, "The store").
    expect(h.app.bridge.ctx.store.audit.of(rejectedId).map((a) => a.state)).toEqual(['REJECTED']);
  });
});
