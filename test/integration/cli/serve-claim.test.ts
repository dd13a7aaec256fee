import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BackupReport } from '../../../src/cli/backup.js';
import type { DoctorReport } from '../../../src/cli/doctor.js';
import { runCli } from '../../helpers/cli.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { IDS, buildStore } from '../../helpers/store-fixture.js';
import { killAll, logged, spawnCli, startBridgeProcess, type BridgeProcess } from '../faults/bridge-process.js';
import { Store } from '../../../src/store/store.js';

/**
 * One `serve` per store (src/store/serve-claim.ts), with real processes: a second bridge whose
 * config differs only in server.listen is refused while the first runs, naming it; the claim of a
 * bridge killed with SIGKILL is taken over; the read commands work beside the running bridge. And
 * a serve that cannot listen leaves no store behind (src/app.ts claimForServe).
 */
const dirs: ConfigDir[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d.dir, { recursive: true, force: true });
});

/** A config with a Maildir, listening at `listen`, its store at `store` (default: state/bridge.sqlite in its folder). */
function config(listen: string, o: { store?: string; maildir?: string } = {}): ConfigDir {
  let toml = minimalToml({ listen });
  if (o.store) toml = toml.replace('path = "state/bridge.sqlite"', `path = "${o.store}"`);
  if (o.maildir) toml = toml.replace('path = "Maildir"', `path = "${o.maildir}"`);
  const c = makeConfigDir(toml);
  if (!o.maildir) for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return c;
}

describe('serve holds its store: a second serve on it is refused', () => {
  let port: number;
  let a: ConfigDir;
  let b: ConfigDir;
  let store: string;
  let first: BridgeProcess;
  beforeAll(async () => {
    port = await freePort();
    a = config(`127.0.0.1:${port}`);
    store = join(a.dir, 'state', 'bridge.sqlite');
    mkdirSync(join(a.dir, 'state'), { mode: 0o700 });
    buildStore(store, Date.now()).close();
    first = await startBridgeProcess(a.configPath);
    // The trial's second config: the same store, Maildir (and log) as the first, another server.listen.
    b = config('127.0.0.1:0', { store, maildir: join(a.dir, 'Maildir') });
  });
  afterAll(killAll);

  it('refused while the first runs, naming its pid, address and config; the claim files are private', async () => {
    const refused = await runCli(['--config', b.configPath, 'serve']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toBe(
      `a2a-mailbridge: the store ${store} is in use by another a2a-mailbridge serve (pid ${first.child.pid}, listening at 127.0.0.1:${port}, started with the config ${a.configPath}): two bridges on one store would both read the mailbox and send the same webhooks; stop that bridge first (a2a-mailbridge --config ${a.configPath} stop, or its service; else kill ${first.child.pid}), or give this config its own store.path\n`,
    );
    expect(first.child.exitCode).toBeNull();
    expect(statSync(`${store}-serve.lock`).mode & 0o777).toBe(0o600);
    expect(statSync(`${store}-serve.json`).mode & 0o777).toBe(0o600);
  });

  it('the read commands (status, tasks, show, ledger, prune --dry-run, backup, doctor) work beside the running bridge', async () => {
    const cli = (...args: string[]) => runCli(['--config', a.configPath, ...args]);
    expect((await cli('status')).status).toBe(0);
    const tasks = await cli('tasks', '--json');
    expect(tasks.status, tasks.stderr).toBe(0);
    expect(tasks.stdout).toContain(IDS.oldWorking);
    expect((await cli('show', IDS.oldWorking)).status).toBe(0);
    expect((await cli('ledger')).status).toBe(0);
    expect((await cli('prune', '--older-than', '90', '--dry-run')).status).toBe(0);
    const backup = await cli('backup', join(a.dir, 'copy.sqlite'), '--json');
    expect(backup.status, backup.stderr).toBe(0);
    expect((JSON.parse(backup.stdout) as BackupReport).file).toBe(join(a.dir, 'copy.sqlite'));
    const doctor = JSON.parse((await cli('doctor', '--json')).stdout) as DoctorReport;
    expect(doctor.checks.find((c) => c.name === 'store')?.status).toBe('ok');
    expect(doctor.checks.find((c) => c.name === 'listen')).toEqual({ name: 'listen', status: 'ok', detail: `127.0.0.1:${port} is taken by this config's bridge, which is running (its /health names this config's store)` });
  }, 180_000);

  it('the claim of a bridge killed with SIGKILL is taken over', async () => {
    // SIGKILL: no clean-up ran, the note names a dead pid; the kernel dropped the lock.
    first.child.kill('SIGKILL');
    await first.exited;
    expect(existsSync(`${store}-serve.json`)).toBe(true);
    const second = spawnCli(['--config', b.configPath, 'serve']);
    await second.line((l) => l.includes('a2a-mailbridge listening'));
    // Now the first config's bridge is the one refused, naming the second.
    const again = await runCli(['--config', a.configPath, 'serve']);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(new RegExp(`in use by another a2a-mailbridge serve \\(pid ${second.child.pid}, listening at 127\\.0\\.0\\.1:\\d+, started with the config ${b.configPath}\\)`));
    await second.stop();
    expect(existsSync(`${store}-serve.json`)).toBe(false); // a clean stop drops its note
  }, 120_000);
});

describe('serve that cannot listen', () => {
  let taken: Server | undefined;
  afterEach(() => void taken?.close());

  it('leaves no store (nor its folder) when there was none', async () => {
    taken = createServer();
    const port = await new Promise<number>((resolve) => taken!.listen(0, '127.0.0.1', () => resolve((taken!.address() as { port: number }).port)));
    const c = config(`127.0.0.1:${port}`);
    const r = await runCli(['--config', c.configPath, 'serve']);
    expect(r.status).toBe(2);
    // Another program (it accepts and never answers /health): no stop command, the file to edit named.
    expect(r.stderr).toBe(`a2a-mailbridge: 127.0.0.1:${port} is already in use by another program (no a2a-mailbridge answers /health there): stop it, or change server.listen in ${c.configPath} to a free port\n`);
    expect(existsSync(join(c.dir, 'state'))).toBe(false);
    expect(readdirSync(c.dir).sort()).toEqual(['Maildir', 'bearer', 'imap-password', 'mailbridge.toml', 'webhook-bearer', 'webhook-secret']);
  });
});

describe('serve makes an older store readable by others 0600', () => {
  afterEach(killAll);
  it('tightens the store, its -wal and the claim lock at start (0644 set outright, whatever the umask), logging the files once', async () => {
    const c = config(`127.0.0.1:${await freePort()}`);
    const store = join(c.dir, 'state', 'bridge.sqlite');
    mkdirSync(join(c.dir, 'state'), { mode: 0o700 });
    Store.open(store).close();
    // As an older version left them: the store 0644, a -wal beside it, and the claim's lock.
    writeFileSync(`${store}-wal`, '');
    writeFileSync(`${store}-serve.lock`, '');
    for (const f of [store, `${store}-wal`, `${store}-serve.lock`]) chmodSync(f, 0o644);
    const bridge = await startBridgeProcess(c.configPath);
    const lines = logged(bridge, 'store files made readable by this user only (mode 0600); they were readable by others');
    expect(lines.map((l) => l.files)).toEqual([[store, `${store}-wal`, `${store}-serve.lock`]]);
    expect(lines[0]!.level).toBe(30);
    for (const f of [store, `${store}-wal`, `${store}-serve.lock`]) expect(statSync(f).mode & 0o777, f).toBe(0o600);
    await bridge.stop();
  });
});
