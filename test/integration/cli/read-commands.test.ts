import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../../src/app.js';
import type { BackupReport } from '../../../src/cli/backup.js';
import type { LedgerJson } from '../../../src/cli/ledger.js';
import type { showJson } from '../../../src/cli/show.js';
import type { StatusReport } from '../../../src/cli/status.js';
import type { TaskJson } from '../../../src/cli/tasks.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { Store } from '../../../src/store/store.js';
import { quickCheck } from '../faults/bridge-process.js';
import { runCli } from '../../helpers/cli.js';
import { freePort } from '../../helpers/free-port.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { IDS, RAW_FORGED, buildStore } from '../../helpers/store-fixture.js';

type ShowJson = ReturnType<typeof showJson>;

/**
 * The operator's read commands and prune/backup, run as child processes on a store with real rows
 * (written through the store functions the bridge uses): filters, JSON, exit codes, read-only
 * access, `ledger --verdict auth:` by prefix, `ledger --raw`, prune never touching an open task,
 * backup that opens and passes quick_check.
 */
let c: ConfigDir;
let store: string;
/** SHA-256 of the store file before any command ran. */
let digestBefore: string;

const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');
const cli = (...args: string[]) => runCli(['--config', c.configPath, ...args]);

beforeAll(() => {
  c = makeConfigDir(minimalToml());
  mkdirSync(join(c.dir, 'state'), { mode: 0o700 });
  store = join(c.dir, 'state', 'bridge.sqlite');
  buildStore(store, Math.floor(Date.now() / 1000) * 1000).close(); // whole seconds, like a mail Date
  digestBefore = sha(store);
});
afterAll(() => {
  if (c) rmSync(c.dir, { recursive: true, force: true });
});

describe('exit codes and --version', () => {
  it('--version prints the version; usage errors exit 2', async () => {
    const v = await runCli(['--version']);
    expect([v.status, v.stdout.trim()]).toEqual([0, (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version]);
    expect((await runCli(['no-such-command'])).status).toBe(2);
    expect((await runCli(['show'])).status).toBe(2);
    expect((await runCli(['tasks', '--no-such-option'])).status).toBe(2);
    const bad = await cli('tasks', '--state', 'done');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^a2a-mailbridge: --state "done" is not a task state; use one of submitted, working.*; did you mean "completed"\?\n$/);
  });

  it('a missing store is a clear error, not a new empty file', async () => {
    const r = await runCli(['tasks', '--db', join(c.dir, 'nope.sqlite')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`a2a-mailbridge: no store at ${join(c.dir, 'nope.sqlite')} (--db); name a store file that exists (a backup, or store.path of a config)\n`);
    expect(existsSync(join(c.dir, 'nope.sqlite'))).toBe(false);
    // The config's store.path: the serve that creates it, with the config's --config.
    const fresh = makeConfigDir(minimalToml());
    try {
      const t = await runCli(['--config', fresh.configPath, 'tasks']);
      expect([t.status, t.stderr]).toEqual([2, `a2a-mailbridge: no store at ${join(fresh.dir, 'state', 'bridge.sqlite')} (config key store.path); \`a2a-mailbridge --config ${fresh.configPath} serve\` creates it on its first start\n`]);
    } finally {
      rmSync(fresh.dir, { recursive: true, force: true });
    }
  });

  it('the commands a message suggests act on the same store: --config, or --db', async () => {
    const viaConfig = await cli('show', 'ffff0000');
    expect([viaConfig.status, viaConfig.stderr]).toEqual([1, `a2a-mailbridge: no task ffff0000; list them with: a2a-mailbridge --config ${c.configPath} tasks\n`]);
    const viaDb = await runCli(['ledger', '--task', 'ffff0000', '--db', store]);
    expect(viaDb.stderr).toBe(`a2a-mailbridge: no such task: ffff0000, and no mail in the ledger names it; list the tasks with: a2a-mailbridge tasks --db ${store}\n`);
    const raw = await runCli(['ledger', '--raw', '999999', '--db', store]);
    expect(raw.stderr).toBe(`a2a-mailbridge: no ledger row #999999; list them with: a2a-mailbridge ledger --db ${store}\n`);
    // A store an older version wrote: the serve that upgrades it is this config's.
    const old = makeConfigDir(minimalToml());
    try {
      mkdirSync(join(old.dir, 'state'), { mode: 0o700 });
      const file = join(old.dir, 'state', 'bridge.sqlite');
      Store.open(file).close();
      const db = new Database(file);
      db.pragma(`user_version = ${MIGRATIONS.length - 1}`);
      db.close();
      const t = await runCli(['--config', old.configPath, 'tasks']);
      expect([t.status, t.stderr]).toEqual([2, `a2a-mailbridge: the store ${file} needs migrations; run a2a-mailbridge --config ${old.configPath} serve once to upgrade it\n`]);
    } finally {
      rmSync(old.dir, { recursive: true, force: true });
    }
  });
});

describe('tasks', () => {
  it('lists every task newest status first, from the store the config names', async () => {
    const r = await cli('tasks');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^UPDATED \(UTC\)\s+STATE\s+AGENT\s+TURN\s+TASK\s+CONTEXT\s+WHY$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[4])).toEqual([IDS.inputRequired, IDS.recentFailed, IDS.oldWorking, IDS.oldCompleted, IDS.oldCanceled]);
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}INPUT_REQUIRED {2}grok /);
  });

  it('filters by agent, state, context, age and count; --json', async () => {
    const ids = async (...args: string[]): Promise<string[]> => {
      const r = await cli('tasks', '--json', ...args);
      expect(r.status, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { id: string }[]).map((t) => t.id);
    };
    expect(await ids('--agent', 'claude')).toEqual([IDS.recentFailed]);
    expect(await ids('--state', 'open')).toEqual([IDS.inputRequired, IDS.oldWorking]);
    expect(await ids('--state', 'TASK_STATE_WORKING,canceled')).toEqual([IDS.oldWorking, IDS.oldCanceled]);
    expect(await ids('--context', 'ctx-shared')).toEqual([IDS.inputRequired, IDS.oldCanceled]);
    expect(await ids('--since', '3d')).toEqual([IDS.inputRequired, IDS.recentFailed]);
    expect(await ids('--limit', '1')).toEqual([IDS.inputRequired]);
    const [first] = JSON.parse((await cli('tasks', '--json', '--limit', '1')).stdout) as TaskJson[];
    expect(first).toMatchObject({ state: 'INPUT_REQUIRED', agent: 'grok', contextId: 'ctx-shared', turn: 1 });
    expect(first!.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe('show', () => {
  it('prints the timeline with attempts, verdicts, state changes, the audit entry and the gaps', async () => {
    const r = await cli('show', IDS.oldCompleted);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^task {6}11111111-0000-4000-8000-000000000001$/m);
    expect(r.stdout).toMatch(/webhook attempt 1 \(turn 1\) failed \(HTTP 503\); took 200 ms; next attempt started \S+Z/);
    expect(r.stdout).toMatch(/webhook attempt 2 \(turn 1\) was accepted \(HTTP 202\); took 1\.0 s/);
    expect(r.stdout).toMatch(/mail #\d+ applied:done: all gates passed/);
    expect(r.stdout).toMatch(/WORKING → COMPLETED: completed by reply/);
    expect(r.stdout).toMatch(/audit entry #1 written \(COMPLETED\)/);
    expect(r.stdout).toMatch(/webhook accepted → mail Date\s+3 min 0 s\s+the agent's work/);
    expect(r.stdout).toMatch(/mail Date → mail seen\s+20 s\s+mail delivery and polling/);
  });

  it('takes a unique prefix; --json; an unknown task exits 1', async () => {
    const j = await cli('show', '3333', '--json');
    expect(j.status, j.stderr).toBe(0);
    const shown = JSON.parse(j.stdout) as ShowJson;
    expect(shown.task).toMatchObject({ id: IDS.recentFailed, state: 'FAILED', failedBy: 'deadline' });
    expect(shown.ledger.map((l: { verdict: string }) => l.verdict)).toEqual(['auth:from-mismatch']);
    expect(j.stdout).not.toContain('reply_token');
    const none = await cli('show', 'ffffffff');
    expect(none.status).toBe(1);
    expect(none.stderr).toBe(`a2a-mailbridge: no task ffffffff; list them with: a2a-mailbridge --config ${c.configPath} tasks\n`);
  });

  it('makes hostile header text inert', async () => {
    const r = await cli('show', IDS.recentFailed);
    expect(r.stdout).not.toContain('\x1b');
  });
});

describe('ledger', () => {
  it('--verdict auth: filters by prefix, newest first; an exact verdict matches exactly', async () => {
    const prefix = await cli('ledger', '--verdict', 'auth:');
    expect(prefix.status, prefix.stderr).toBe(0);
    const rows = prefix.stdout.trimEnd().split('\n').slice(1);
    expect(rows.map((l) => l.split(/\s+/)[2])).toEqual(['auth:from-mismatch', 'auth:dkim-unaligned']);
    expect(prefix.stdout).not.toContain('\x1b');
    const exact = JSON.parse((await cli('ledger', '--verdict', 'auth:from-mismatch', '--json')).stdout) as LedgerJson[];
    expect(exact.map((l: { verdict: string }) => l.verdict)).toEqual(['auth:from-mismatch']);
    const applied = JSON.parse((await cli('ledger', '--verdict', 'applied:', '--json')).stdout) as LedgerJson[];
    expect(applied.map((l: { verdict: string }) => l.verdict).sort()).toEqual(['applied:done', 'applied:input-required']);
    const unknown = await cli('ledger', '--verdict', 'forged');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/--verdict "forged" matches no verdict; use one of duplicate, too-large/);
  });

  it('filters by task, time and count; JSON never holds the raw bytes', async () => {
    const byTask = JSON.parse((await cli('ledger', '--task', IDS.oldWorking, '--json')).stdout) as LedgerJson[];
    expect(byTask.map((l: { verdict: string }) => l.verdict)).toEqual(['auth:dkim-unaligned']);
    // The TASK column prints 8 characters: that prefix (in any case) finds the same rows.
    const table = (await cli('ledger', '--verdict', 'auth:dkim-unaligned')).stdout.trimEnd().split('\n');
    const shortId = table[1]!.split(/\s+/)[3]!;
    expect(shortId).toBe(IDS.oldWorking.slice(0, 8));
    expect(JSON.parse((await cli('ledger', '--task', shortId, '--json')).stdout) as LedgerJson[]).toEqual(byTask);
    expect(JSON.parse((await cli('ledger', '--task', shortId.toUpperCase(), '--json')).stdout) as LedgerJson[]).toEqual(byTask);
    // A task that does not exist is said so, exit 1 — not an empty table with exit 0.
    const none = await cli('ledger', '--task', 'ffffffff');
    expect([none.status, none.stdout]).toEqual([1, '']);
    expect(none.stderr).toBe(`a2a-mailbridge: no such task: ffffffff, and no mail in the ledger names it; list the tasks with: a2a-mailbridge --config ${c.configPath} tasks\n`);
    const recent = JSON.parse((await cli('ledger', '--since', '2d', '--json')).stdout) as LedgerJson[];
    expect(recent.map((l: { verdict: string }) => l.verdict)).toEqual(['no-task-id', 'applied:input-required', 'auth:from-mismatch']);
    const old = JSON.parse((await cli('ledger', '--until', '30d', '--json')).stdout) as LedgerJson[];
    expect(old.map((l: { verdict: string }) => l.verdict)).toEqual(['no-task-id', 'auth:dkim-unaligned', 'applied:done']);
    expect(JSON.parse((await cli('ledger', '--limit', '2', '--json')).stdout)).toHaveLength(2);
    // --wide: the same rows, no cell cut; with --raw it is a usage error like every other option.
    const wide = await cli('ledger', '--wide', '--verdict', 'auth:');
    expect([wide.status, wide.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[2])]).toEqual([0, ['auth:from-mismatch', 'auth:dkim-unaligned']]);
    expect((await cli('ledger', '--raw', '1', '--wide')).status).toBe(2);
    const all = await cli('ledger', '--json');
    expect(all.stdout).not.toContain('"raw"');
    expect(all.stdout).not.toContain('forged\\r\\n');
  });

  it('--raw <id> writes the exact bytes to stdout; rows without bytes, or no such row, exit 1', async () => {
    const [forged] = JSON.parse((await cli('ledger', '--verdict', 'auth:from-mismatch', '--json')).stdout) as LedgerJson[];
    const raw = await cli('ledger', '--raw', String(forged!.id));
    expect(raw.status, raw.stderr).toBe(0);
    expect(raw.stdoutBytes.equals(RAW_FORGED)).toBe(true);
    const [untagged] = JSON.parse((await cli('ledger', '--verdict', 'no-task-id', '--json', '--limit', '1')).stdout) as LedgerJson[];
    const none = await cli('ledger', '--raw', String(untagged!.id));
    expect(none.status).toBe(1);
    expect(none.stderr).toBe(`a2a-mailbridge: ledger row #${untagged!.id} (no-task-id) kept no raw bytes: only tagged mail is kept\n`);
    expect((await cli('ledger', '--raw', '99999')).status).toBe(1);
    expect((await cli('ledger', '--raw', '1', '--json')).status).toBe(2);
  });

  it('every read command left the store file as it was (opened read-only)', () => {
    expect(sha(store)).toBe(digestBefore);
  });
});

describe('status', () => {
  it('exits 3 when no bridge answers at server.listen (as an LSB status action for a service not running)', async () => {
    const port = await freePort(); // nothing listens there
    const down = makeConfigDir(minimalToml({ listen: `127.0.0.1:${port}` }));
    const r = await runCli(['--config', down.configPath, 'status']);
    rmSync(down.dir, { recursive: true, force: true });
    expect(r.status, r.stderr).toBe(3);
    expect(r.stdout).toContain(`bridge    not answering at http://127.0.0.1:${port} (ECONNREFUSED); start it: a2a-mailbridge --config ${down.configPath} serve`);
  });

  it("with server.listen port 0, finds this config's running bridge at the port its store's claim notes (exit 0); once it stopped, no serve holds the claim: not running (exit 3)", async () => {
    const z = makeConfigDir(minimalToml()); // server.listen = "127.0.0.1:0"
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(z.dir, 'Maildir', sub), { recursive: true });
    const app = await startApp(loadConfig(z.configPath), { log: createLogger('silent') });
    try {
      const at = `http://127.0.0.1:${(app.server.server.address() as AddressInfo).port}`;
      const r = await runCli(['--config', z.configPath, 'status']);
      expect(r.status, r.stdout).toBe(0);
      expect(r.stdout.split('\n')[1]).toMatch(new RegExp(`^bridge {4}answering at ${at.replaceAll('.', '\\.')} \\(version `));
      const j = JSON.parse((await runCli(['--config', z.configPath, 'status', '--json'])).stdout) as StatusReport;
      expect(j.bridge).toMatchObject({ answering: true, url: `${at}/health`, sameStore: true, claimed: true, taken: false, cannotTell: false });
    } finally {
      await app.close();
    }
    const down = await runCli(['--config', z.configPath, 'status']);
    rmSync(z.dir, { recursive: true, force: true });
    expect(down.status, down.stdout).toBe(3);
    const cmd = `a2a-mailbridge --config ${z.configPath}`;
    expect(down.stdout.split('\n')[1]).toBe(`bridge    not answering at http://127.0.0.1:0 (server.listen has port 0 (a new port at each start), and no serve holds this config's store ${join(z.dir, 'state', 'bridge.sqlite')}); start it: ${cmd} serve, or ${cmd} service status`);
  });

  it('sums up tasks, the mailbox, failing webhooks and refused replies for open tasks, read-only', async () => {
    const r = await cli('status');
    expect(r.status, r.stderr).toBe(3); // port 0, and no serve holds the store's claim: not running
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`a2a-mailbridge status: ${c.configPath}`);
    // Every command named carries this config's --config: run as printed, it acts on this config.
    const cmd = `a2a-mailbridge --config ${c.configPath}`;
    expect(lines[1]).toBe(`bridge    not answering at http://127.0.0.1:0 (server.listen has port 0 (a new port at each start), and no serve holds this config's store ${store}); start it: ${cmd} serve, or ${cmd} service status`);
    expect(lines[2]).toMatch(new RegExp(`^store {5}${store.replaceAll('.', '\\.')}: \\d+\\.\\d (KiB|MiB) on disk \\(with its -wal/-shm\\)$`));
    expect(lines.slice(3)).toEqual([
      'tasks     2 open (0 SUBMITTED, 1 WORKING, 1 INPUT_REQUIRED); 3 finished (1 COMPLETED, 1 FAILED, 1 CANCELED, 0 REJECTED)',
      'mailbox   maildir, never checked yet',
      // the ledger's newest row (the seeded store was never checked by a bridge of its own)
      expect.stringMatching(/^ {12}last mail recorded \d{4}-\d\d-\d\dT\S+Z \(.+ ago\): \S+ \(a2a-mailbridge --config \S+ ledger shows it\)$/),
      'webhooks  none failing',
      'refused   replies refused for 1 open task:',
      expect.stringMatching(/^ {12}task 22222222 \(grok, WORKING\): 1 reply, last auth:dkim-unaligned \(\d+ d \d+ h ago\): a2a-mailbridge --config \S+ ledger --task 22222222$/),
    ]);
    const j = JSON.parse((await cli('status', '--json')).stdout) as StatusReport;
    expect(j).toMatchObject({ tasks: { open: 2, finished: 3 }, failingWebhooks: [], refusedRepliesForOpenTasks: [{ taskId: IDS.oldWorking, count: 1, lastVerdict: 'auth:dkim-unaligned' }] });
    expect(j.store.bytes).toBeGreaterThan(0);
    expect(sha(store)).toBe(digestBefore);
  });
});

describe('backup and prune', () => {
  it('backup writes a new 0600 file that opens and passes quick_check; it never overwrites', async () => {
    const target = join(c.dir, 'backup.sqlite');
    const r = await cli('backup', target);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^backup written: ${target} \\(\\d+ bytes, \\d+ pages, schema version \\d+, quick_check ok\\)\\n$`));
    expect(statSync(target).mode & 0o777).toBe(0o600);
    // One self-contained file: no -wal/-shm beside it (it is no longer in WAL mode).
    const beside = (): string[] => readdirSync(c.dir).filter((f) => f.startsWith('backup.sqlite')).sort();
    expect(beside()).toEqual(['backup.sqlite']);
    expect(quickCheck(target)).toBe('ok');
    const copy = Store.open(target, { readOnly: true });
    expect(copy.stats.rowCounts().tasks).toBe(5);
    copy.close();
    const before = sha(target);
    const again = await cli('backup', target);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`a2a-mailbridge: refusing to overwrite ${target}; choose a new file name\n`);
    expect(sha(target)).toBe(before);
    // A backup is a store the read commands take with --db.
    const fromBackup = await runCli(['tasks', '--db', target, '--json']);
    expect(JSON.parse(fromBackup.stdout)).toHaveLength(5);
    expect(beside()).toEqual(['backup.sqlite']);
  });

  it('backup --json reports the copy; a missing folder is refused with the command that creates it', async () => {
    const target = join(c.dir, 'backup-json.sqlite');
    const r = await cli('backup', target, '--json');
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as BackupReport;
    expect(report).toEqual({ file: target, bytes: statSync(target).size, pages: expect.any(Number) as unknown, schemaVersion: expect.any(Number) as unknown, quickCheck: 'ok' });
    // The page size is in the file's header (bytes 16–17, big-endian: https://sqlite.org/fileformat.html).
    expect(report.bytes).toBe(report.pages * readFileSync(target).readUInt16BE(16));

    const missing = join(c.dir, 'no-such-folder', 'b.sqlite');
    const m = await cli('backup', missing);
    expect(m.status).toBe(1);
    expect(m.stderr).toBe(`a2a-mailbridge: the folder ${join(c.dir, 'no-such-folder')} does not exist; create it first (mkdir -m 700 -p ${join(c.dir, 'no-such-folder')}) or choose a file in an existing folder\n`);
    expect(existsSync(join(c.dir, 'no-such-folder'))).toBe(false);
  });

  it('prune --dry-run counts and deletes nothing; prune then deletes exactly that, never an open task', async () => {
    expect((await cli('prune')).status).toBe(2);
    const dry = await cli('prune', '--older-than', '30', '--dry-run', '--json');
    expect(dry.status, dry.stderr).toBe(0);
    const planned: unknown = JSON.parse(dry.stdout);
    const counts = { dryRun: true, tasks: 2, turns: 2, attempts: 2, messages: 2, artifacts: 0, replies: 1, attachments: 1, events: 5, ledger: 2 };
    expect(planned).toMatchObject(counts);
    expect(sha(store)).toBe(digestBefore);
    // The ages tasks --since and ledger --since take: 30d and 720h are the same cut as 30.
    for (const age of ['30d', '720h']) expect(JSON.parse((await cli('prune', '--older-than', age, '--dry-run', '--json')).stdout)).toMatchObject(counts);

    const done = await cli('prune', '--older-than', '30');
    expect(done.status, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/^deleted 2 tasks, 2 turns, 2 dispatch attempts, 2 messages, 0 artifacts, 1 reply, 1 attachment, 5 task events, 2 ledger rows \(tasks finished and mail seen before .*Z; open tasks and audit entries are kept\)\n$/);
    const left = (JSON.parse((await cli('tasks', '--json')).stdout) as TaskJson[]).map((t: { id: string; state: string }) => [t.id, t.state]);
    expect(left).toEqual([
      [IDS.inputRequired, 'INPUT_REQUIRED'],
      [IDS.recentFailed, 'FAILED'],
      [IDS.oldWorking, 'WORKING'],
    ]);
    // The open task 40 days old keeps its old ledger row.
    expect(JSON.parse((await cli('ledger', '--task', IDS.oldWorking, '--json')).stdout)).toHaveLength(1);

    // Even a cut of 0 days leaves the open tasks.
    await cli('prune', '--older-than', '0');
    const open = (JSON.parse((await cli('tasks', '--json')).stdout) as TaskJson[]).map((t: { id: string }) => t.id);
    expect(open).toEqual([IDS.inputRequired, IDS.oldWorking]);

    const pruned = await cli('show', IDS.oldCompleted);
    expect(pruned.status).toBe(0);
    expect(pruned.stdout).toMatch(/^task 11111111-0000-4000-8000-000000000001 was pruned; its audit entries remain:/);
    expect(pruned.stdout).toContain('"state": "COMPLETED"');
  });
});

describe('--db in the help of the commands that write', () => {
  it('prune says it deletes from that file, backup that it copies it; the read commands that they read it', async () => {
    const help = async (cmd: string): Promise<string> => (await runCli([cmd, '--help'])).stdout.replace(/\s+/g, ' ');
    expect(await help('prune')).toContain('--db <file> delete from this store file instead of store.path of the config');
    expect(await help('backup')).toContain('--db <file> copy this store file instead of store.path of the config');
    expect(await help('tasks')).toContain('--db <file> read this store file (a backup, say)');
  });
});

describe('a reader that closes the pipe early (`… | head -1`)', () => {
  // A CLI printing to a closed pipe ends quietly, as other Unix tools do: EPIPE on stdout is status
  // 0 with no error on stderr; on stderr (nothing more can be said) the command keeps its own status.
  it.each([
    [['completion', 'bash']],
    [['tasks']],
    [['ledger']],
    [['show', IDS.oldCompleted]],
    [['service', 'install', '--dry-run', '--launchd']],
  ])('%j exits 0 with nothing about the pipe on stderr when stdout is closed', async (args) => {
    const r = await runCli(['--config', c.configPath, ...args], { closed: 'stdout' });
    expect(r.stderr).not.toMatch(/EPIPE|Error|a2a-mailbridge:/);
    expect(r.status).toBe(0);
  });

  it('stderr closed: a usage error still exits 2, and a dry run with its notes on stderr keeps its status', async () => {
    expect((await runCli(['--config', c.configPath, 'tasks', '--state', 'done'], { closed: 'stderr' })).status).toBe(2);
    // 0 when the install would write (dist/cli/main.js built, as `npm test` does first); HOME: no plist there yet.
    const dryRun = ['--config', c.configPath, 'service', 'install', '--dry-run', '--launchd'];
    const open = await runCli(dryRun, { env: { HOME: c.dir } });
    const closed = await runCli(dryRun, { env: { HOME: c.dir }, closed: 'stderr' });
    expect(closed.stdout.split('\n').length).toBe(open.stdout.split('\n').length);
    expect([closed.status, open.stderr]).toEqual([open.status, expect.stringMatching(/^# would write /)]);
  });
});
