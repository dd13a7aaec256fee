import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { formatStatus, type StatusReport } from '../../../src/cli/status.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { killAll, logged, startBridgeProcess } from '../faults/bridge-process.js';

/**
 * The store file moved away from store.path after a bridge ran on it (fresh-user trial 12: `mv
 * state/mailbridge.sqlite state/moved.sqlite`, then `stop`): `status` said the store "does not
 * exist yet; serve creates it on its first start" (exit 0), `tasks` the same, `doctor` ok, and the
 * next `serve` started an empty store without a word, the tasks out of sight. The claim lock a
 * serve leaves beside the store tells a store that was there: each now says it was moved or
 * deleted and what to do, doctor fails, and serve warns in its log that it starts an empty store.
 */
const dirs: ConfigDir[] = [];
afterEach(killAll);
afterAll(() => {
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

/** A config on a free loopback port with its Maildir made (cur/, new/, tmp/). */
async function maildirConfig(): Promise<ConfigDir> {
  const c = makeConfigDir(minimalToml({ listen: `127.0.0.1:${await freePort()}`, webhookUrl: 'http://127.0.0.1:1/hook' }));
  dirs.push(c);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  return c;
}

describe('a store file moved away after a bridge ran on it', () => {
  it('status, tasks and doctor say it was moved or deleted; the next serve warns that it starts an empty store', async () => {
    const c = await maildirConfig();
    const store = join(c.dir, 'state', 'bridge.sqlite');
    const first = await startBridgeProcess(c.configPath);
    expect((await runCli(['--config', c.configPath, 'stop'])).status).toBe(0);
    await first.exited;
    renameSync(store, join(c.dir, 'state', 'moved.sqlite'));

    const st = await runCli(['--config', c.configPath, 'status']);
    expect(st.stdout).toContain(`store     no store at ${store}, though a serve has run on it (its claim lock is there): it was moved or deleted; put it back`);
    const tasks = await runCli(['--config', c.configPath, 'tasks']);
    expect(tasks.status).toBe(2);
    expect(tasks.stderr).toContain('though a serve has run on it (its claim lock is there): it was moved or deleted');
    const doctor = await runCli(['--config', c.configPath, 'doctor', '--json']);
    const check = (JSON.parse(doctor.stdout) as { checks: { name: string; status: string; detail: string }[] }).checks.find((x) => x.name === 'store');
    expect(check).toMatchObject({ status: 'fail', detail: expect.stringContaining('it was moved or deleted') as unknown });

    const second = await startBridgeProcess(c.configPath);
    expect(logged(second, 'no store at store.path, though a serve has run on it (its claim lock is there): it was moved or deleted, and this bridge starts an empty store; to keep the tasks, stop it and put the store back (or restore a backup) before the next start')).toHaveLength(1);
  });

  it('a first start says nothing of the kind', async () => {
    const c = await maildirConfig();
    const st = await runCli(['--config', c.configPath, 'status']);
    expect(st.stdout).toContain('does not exist yet; serve creates it on its first start');
    const bridge = await startBridgeProcess(c.configPath);
    expect(bridge.lines.some((l) => l.includes('though a serve has run on it'))).toBe(false);
  });
});

describe('status of a config whose store another config\'s serve holds', () => {
  it('says that serve holds it, names it, and that a serve of this config would be refused (was: "start it")', async () => {
    const a = await maildirConfig();
    const store = join(a.dir, 'state', 'bridge.sqlite');
    const port = await freePort();
    const b = makeConfigDir(minimalToml({ listen: `127.0.0.1:${port}`, webhookUrl: 'http://127.0.0.1:1/hook' }).replace('path = "state/bridge.sqlite"', `path = "${store}"`));
    dirs.push(b);
    const running = await startBridgeProcess(a.configPath);
    const st = await runCli(['--config', b.configPath, 'status']);
    const line = st.stdout.split('\n')[1]!;
    expect(line).toContain(`bridge    not answering at http://127.0.0.1:${port} (ECONNREFUSED), but another a2a-mailbridge serve holds its store ${store} (pid ${running.child.pid}, started with ${a.configPath}, listening at 127.0.0.1:`);
    expect(line).toContain('): a serve of this config would be refused; use that bridge, or stop it (a2a-mailbridge --config <the file it was started with> stop) before you start this one');
  });
});

describe("status shows the running bridge's own account of a store that is not ok", () => {
  it("prints /health's store.lastCheck under the store line", () => {
    const report: StatusReport = {
      config: '/c/mailbridge.toml',
      bridge: { answering: true, url: 'http://127.0.0.1:8765/health', status: 'degraded', version: '0.1.0', sameStore: true, why: null, storeNamed: true, olderBearer: null, claimed: true, taken: false, cannotTell: false, storeAway: null, storeProblem: 'the store file /s/bridge.sqlite was moved away or deleted while the bridge runs' },
      store: { path: '/s/bridge.sqlite', exists: false, bytes: 0 },
      tasks: null,
      mailbox: null,
      failingWebhooks: [],
      dispatchFailuresLast7Days: 0,
      refusedRepliesForOpenTasks: [],
    };
    expect(formatStatus(report, Date.now())).toContain("NOT OK in the running bridge's /health: the store file /s/bridge.sqlite was moved away or deleted while the bridge runs");
  });
});
