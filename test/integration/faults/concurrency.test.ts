import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { STORE_CHECK_FIRST_MS } from '../../../src/core/bridge.js';
import { createLogger } from '../../../src/log.js';
import { PAGE_BYTES } from '../../../src/store/db.js';
import { Store } from '../../../src/store/store.js';
import { RECONNECT_EVERY_MS } from '../../../src/uplink/imap-mailbox.js';
import { runCli } from '../../helpers/cli.js';
import { quickCheck } from './bridge-process.js';
import { hermesBody, startHarness, type Harness } from '../../helpers/bridge-harness.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { startDovecot, type DovecotHandle } from '../../helpers/dovecot.js';
import { killAll, REPO, spawnCli } from './bridge-process.js';
import { fenceOf } from '../../helpers/agent-text.js';
import { newContext, shown } from './caller-view.js';
import { startImapProxy } from './imap-faults.js';
import { Summary } from './summary.js';
import type { V1Task } from '../../../src/a2a/wire.js';
import type { Counts } from './store-load.js';

/**
 * Concurrency: many polls share one mailbox check; the sweep and the poller, in separate processes
 * on one store file, never see SQLITE_BUSY; a store with a damaged header or schema is refused at
 * start with a message that names the fix, and damage elsewhere is named by quick_check in doctor,
 * backup and serve's background check.
 */
let dovecot: DovecotHandle;
let folders = 0;
const cleanup: (() => Promise<void>)[] = [];
const summary = new Summary('Concurrency and store faults (test/integration/faults/concurrency.test.ts)');

beforeAll(async () => {
  dovecot = await startDovecot();
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
  await killAll();
});
afterAll(async () => {
  await dovecot?.stop();
  summary.print();
});

/** IMAP commands of one kind the bridge sent after index `from`. */
const count = (h: Harness, from: number, verb: RegExp): number => h.imapCommands.slice(from).filter((c) => verb.test(c.replace(/^\S+ /, ''))).length;

async function fiftyPolls(h: Harness, ctx: string): Promise<{ answers: (V1Task | undefined)[]; errors: string[]; slowest: number }> {
  const errors: string[] = [];
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: 50 }, async () => {
      try {
        const r = await h.rpc(hermesBody('status', ctx));
        if (r.status !== 200 || r.json.error) errors.push(`${r.status} ${JSON.stringify(r.json.error ?? r.json)}`);
        return r.json.result?.task;
      } catch (err) {
        errors.push((err as Error).message);
        return undefined;
      }
    }),
  );
  return { answers, errors, slowest: performance.now() - started };
}

/**
 * A bridge on a fresh folder of the file's Dovecot (reached at `port`: a proxy's, say), cleaned up
 * after the file, settled, with one WORKING task on a new context.
 */
async function harnessWithTask(folder: string, port: number, mailboxToml: string): Promise<{ h: Harness; ctx: string; first: V1Task }> {
  const h = await startHarness({ dovecot: { ...dovecot, port }, mailboxToml: `folder = "${folder}"\n${mailboxToml}` });
  cleanup.push(async () => {
    await h.close();
    rmSync(h.configDir.dir, { recursive: true, force: true });
  });
  await h.app.bridge.idle();
  const ctx = newContext();
  const first = (await h.rpc(hermesBody('Summarise the report', ctx))).json.result!.task!;
  expect(first.status.state).toBe('TASK_STATE_WORKING');
  return { h, ctx, first };
}

describe('50 concurrent polls share one mailbox check', () => {
  it('check_interval_s = 15, check due: 50 polls at once → one STATUS and one EXAMINE on the kept session, zero errors; the reply is applied once and all 50 see it', async () => {
    const folder = `C${++folders}`;
    await dovecot.createFolder(folder);
    const { h, ctx, first } = await harnessWithTask(folder, dovecot.port, 'check_interval_s = 15');
    await dovecot.append(await h.reply(h.envelope(1), { answer: 'Shared by fifty polls.' }), { folder });
    h.advance(16_000); // the next check is due

    const before = h.imapCommands.length;
    const { answers, errors, slowest } = await fiftyPolls(h, ctx);
    await h.app.bridge.idle();
    expect(errors).toEqual([]);
    // One check, on the session kept since the start-up check (uplink/imap-mailbox.ts): no new login.
    expect(count(h, before, /^STATUS /i)).toBe(1);
    expect(count(h, before, /^EXAMINE /i)).toBe(1);
    expect(count(h, before, /^(LOGIN|AUTHENTICATE) /i)).toBe(0);
    // Every poll joined the check (or came after it): all 50 see the applied reply.
    expect(answers.filter((t) => t?.status.state === 'TASK_STATE_COMPLETED')).toHaveLength(50);
    expect(answers.every((t) => fenceOf(shown(t)).body === 'Shared by fifty polls.')).toBe(true);
    expect(h.app.bridge.ctx.store.ledger.ofTask(first.id).map((l) => l.verdict)).toEqual(['applied:done']);
    summary.add('50 concurrent polls, check due (check_interval_s = 15)', `1 STATUS and 1 EXAMINE on the kept session (no LOGIN), 0 errors, all 50 answered 200 COMPLETED within ${Math.round(slowest)} ms; reply applied once`);
  });

  it('check_interval_s = 0 and a slow server (500 ms to connect): 50 polls at once still make one check', async () => {
    const folder = `C${++folders}`;
    await dovecot.createFolder(folder);
    const proxy = await startImapProxy(dovecot.port, 'pass', 500);
    cleanup.push(() => proxy.close());
    const { h, ctx } = await harnessWithTask(folder, proxy.port, '');
    // The session kept since the start-up check is too old: this check connects (slowly) afresh.
    h.advance(RECONNECT_EVERY_MS);

    const before = h.imapCommands.length;
    const acceptedBefore = proxy.stats.accepted;
    const { answers, errors, slowest } = await fiftyPolls(h, ctx);
    await h.app.bridge.idle();
    expect(errors).toEqual([]);
    expect(answers.every((t) => t?.status.state === 'TASK_STATE_WORKING')).toBe(true);
    expect(count(h, before, /^EXAMINE /i)).toBe(1);
    expect(proxy.stats.accepted - acceptedBefore).toBe(1);
    summary.add('50 concurrent polls, check_interval_s = 0, IMAP 500 ms slow', `1 IMAP connection, 1 EXAMINE, 0 errors, all 50 answered 200 WORKING within ${Math.round(slowest)} ms`);
  });
});

/**
 * Runs store-load.ts processes in parallel and returns their counts. The processes wait at two
 * barriers this side holds over their pipes (store-load.ts): none starts its loop before all have
 * opened the store, and none runs its last iteration before all are inside their loops.
 */
async function load(store: string, roles: { role: string; n: number }[]): Promise<Counts[]> {
  const children = roles.map(({ role, n }, index) =>
    spawn(process.execPath, ['--import', 'tsx', 'test/integration/faults/store-load.ts', role, store, String(n), String(index % 2)], {
      cwd: REPO,
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const said = { ready: 0, looping: 0 };
  const tell = (line: string): void => {
    for (const c of children) c.stdin.write(`${line}\n`);
  };
  return Promise.all(
    children.map(
      (child, index) =>
        new Promise<Counts>((resolve, reject) => {
          const role = roles[index]!.role;
          let out = '';
          let err = '';
          child.stdout.setEncoding('utf8').on('data', (d: string) => {
            out += d;
            let nl: number;
            while ((nl = out.indexOf('\n')) >= 0 && /^(ready|looping)\n/.test(out)) {
              const line = out.slice(0, nl) as 'ready' | 'looping';
              out = out.slice(nl + 1);
              if (++said[line] === children.length) tell(line === 'ready' ? 'start' : 'all-looping');
            }
          });
          child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
          child.once('exit', (code) => {
            if (code !== 0) return reject(new Error(`store-load ${role} exited ${code}: ${err}`));
            resolve(JSON.parse(out.trim()) as Counts);
          });
        }),
    ),
  );
}

describe('SQLite under contention and damage', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const tempDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'mb-faults-'));
    dirs.push(d);
    return d;
  };

  it('sweep and poller in 4 processes on one store: ≥ 1,000 read-then-write transactions, zero SQLITE_BUSY, every task failed exactly once', async () => {
    const store = join(tempDir(), 'bridge.sqlite');
    Store.open(store).close(); // created and migrated before the processes start
    const results = await load(store, [
      { role: 'sweeper', n: 100 },
      { role: 'sweeper', n: 100 },
      { role: 'poller', n: 300 },
      { role: 'poller', n: 300 },
    ]);
    const sweepTx = results.filter((r) => r.role === 'sweeper').reduce((n, r) => n + r.tx, 0);
    const pollTx = results.filter((r) => r.role === 'poller').reduce((n, r) => n + r.tx, 0);
    const busy = results.reduce((n, r) => n + r.busy, 0);
    const other = results.flatMap((r) => r.other);
    expect(busy).toBe(0);
    expect(other).toEqual([]);
    expect(pollTx).toBe(600);
    expect(sweepTx + pollTx).toBeGreaterThanOrEqual(1000);
    // The processes overlapped by arrangement (the barriers in load()): each ran iterations while
    // every other was inside its loop.
    for (const r of results) expect(r.afterAllLooping, `${r.role} ${r.index}`).toBeGreaterThanOrEqual(1);

    const db = Store.open(store, { readOnly: true });
    try {
      expect(db.stats.tasksByState()).toEqual({ FAILED: 1000 });
      const tasks = db.tasks.rows({ limit: 2000 });
      const failedOnce = tasks.filter((t) => db.events.of(t.id).filter((e) => e.toState === 'FAILED').length === 1);
      expect(failedOnce).toHaveLength(1000);
      expect(db.stats.rowCounts()).toMatchObject({ tasks: 1000, audit: 1000, ledger: 600 });
      expect(results.filter((r) => r.role === 'sweeper').reduce((n, r) => n + r.failed, 0)).toBe(1000);
      expect(db.mailbox.state('INBOX').lastUid).toBe(600);
    } finally {
      db.close();
    }
    expect(quickCheck(store)).toBe('ok');
    const maxTx = Math.max(...results.map((r) => r.maxTxMs));
    summary.add(
      '4 processes (2 sweepers seeding + sweepDeadlines, 2 pollers with the mail-check transaction) on one store',
      `${sweepTx + pollTx} read-then-write BEGIN IMMEDIATE transactions (${sweepTx} sweep, ${pollTx} poll), every process inside its loop while all others were: 0 SQLITE_BUSY, 0 other errors; 1,000 tasks each FAILED exactly once (1 event, 1 audit entry), 600 ledger rows, watermark 600, quick_check ok; longest transaction incl. lock wait ${maxTx.toFixed(1)} ms`,
    );

    // Control: the same poller transaction opened DEFERRED does meet SQLITE_BUSY, so the count above can see it.
    const control = join(tempDir(), 'control.sqlite');
    Store.open(control).close();
    const deferred = await load(control, [
      { role: 'poller-deferred', n: 300 },
      { role: 'poller-deferred', n: 300 },
    ]);
    const controlBusy = deferred.reduce((n, r) => n + r.busy, 0);
    summary.add('control: the same poller transaction opened DEFERRED, 2 processes × 300', `${controlBusy} SQLITE_BUSY (what BEGIN IMMEDIATE avoids)`);
  });

  /** A store with 300 tasks (enough pages to damage some in the middle), closed so the WAL is checkpointed. */
  const goodStore = (): string => {
    const good = join(tempDir(), 'good.sqlite');
    const db = Store.open(good);
    for (let i = 0; i < 300; i++) {
      db.tx((tx) =>
        tx.tasks.insert({
          id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, agent: 'grok', contextId: `ctx-${i}`, state: 'COMPLETED',
          stateReason: 'x'.repeat(500), failedBy: null, turn: 1, caller: 'test', createdAt: i, updatedAt: i, deadlineAt: null,
        }),
      );
    }
    db.close();
    return good;
  };
  /** The page size of the stores the bridge creates (store/db.ts). */
  const PAGE = PAGE_BYTES;
  const FIX = 'restore it from a backup (a2a-mailbridge backup) or move it aside to start empty';

  /** A copy of a good store in a fresh config folder, with `damage` (byte ranges) overwritten; its path and the original bytes. */
  const damagedStore = (damage: (pages: number, taskPages: number[]) => { at: number; length: number }[]): { cfg: ReturnType<typeof makeConfigDir>; damaged: string; before: Buffer } => {
    const good = goodStore();
    const pages = statSync(good).size / PAGE;
    expect(pages).toBeGreaterThan(20);
    // The leaf pages of the tasks table (1-based page numbers, in file order): rows, not the
    // schema, which opening the store reads (its definitions span several pages).
    const stat = new Database(good, { readonly: true });
    const taskPages = stat.prepare(`SELECT pageno FROM dbstat WHERE name = 'tasks' AND pagetype = 'leaf' ORDER BY pageno`).pluck().all() as number[];
    stat.close();
    const cfg = makeConfigDir(minimalToml());
    dirs.push(cfg.dir);
    mkdirSync(join(cfg.dir, 'state'), { mode: 0o700 });
    const damaged = join(cfg.dir, 'state', 'bridge.sqlite');
    copyFileSync(good, damaged);
    const fd = openSync(damaged, 'r+');
    for (const { at, length } of damage(pages, taskPages)) writeSync(fd, Buffer.alloc(length, 0xa5), 0, length, at);
    closeSync(fd);
    return { cfg, damaged, before: readFileSync(damaged) };
  };

  it.each([
    ['the 100-byte file header overwritten', () => [{ at: 0, length: 100 }]],
    ['the schema page (page 1 after the header) overwritten', () => [{ at: 100, length: PAGE - 100 }]],
  ] as const)('a store whose header or schema is damaged is refused at start with exit 2 and the fix: %s', async (what, damage) => {
    const { cfg, damaged, before } = damagedStore(damage);
    const p = spawnCli(['--config', cfg.configPath, 'serve']);
    const { code } = await p.exited;
    const stderr = p.lines.join('\n');
    summary.add(`damaged store: ${what}`, `serve exits ${code}: "${stderr.replace(damaged, '<store>').replace(/\n/g, ' ⏎ ')}"`);
    expect(code, stderr).toBe(2);
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(stderr.startsWith(`a2a-mailbridge: the store ${damaged} `), stderr).toBe(true);
    expect(readFileSync(damaged).equals(before)).toBe(true); // refused without touching the file
    // What a person needs: that the file is damaged, and what to do about it.
    expect(stderr, 'the message must say the store is damaged and give the fix').toMatch(/damaged/);
    expect(stderr, 'the message must say the store is damaged and give the fix').toContain(FIX);
  });

  it('damaged pages in the middle of the store are named by quick_check in doctor, backup and the background check (never at open: its cost grows with the store)', async () => {
    const { cfg, damaged, before } = damagedStore((_pages, taskPages) => {
      expect(taskPages.length).toBeGreaterThan(8);
      const mid = Math.floor(taskPages.length / 2);
      return [taskPages[mid]!, taskPages[mid + 1]!, taskPages[mid + 3]!].map((p) => ({ at: (p - 1) * PAGE, length: PAGE }));
    });
    const quickCheckLine = /quick_check: [\s\S]*Tree \d+ page \d+/;

    const doctor = await runCli(['--config', cfg.configPath, 'doctor', '--json']);
    expect(doctor.stdout, doctor.stderr).not.toBe("");
    const store = (JSON.parse(doctor.stdout) as { checks: { name: string; status: string; detail: string; fix?: string }[] }).checks.find((c) => c.name === 'store')!;
    expect(doctor.status).toBe(1);
    expect(store.status).toBe('fail');
    expect(store.detail).toMatch(quickCheckLine);
    expect(store.fix).toBe(FIX);

    const target = join(cfg.dir, 'copy.sqlite');
    const backup = await runCli(['--config', cfg.configPath, 'backup', target]);
    expect(backup.status).toBe(1);
    expect(backup.stderr).toMatch(/failed quick_check \([\s\S]*Tree \d+ page \d+/);
    expect(existsSync(target)).toBe(false);

    // serve's background check, on the bridge clock: the first STORE_CHECK_FIRST_MS after start.
    let now = Date.now();
    const built = buildBridge(loadConfig(cfg.configPath), { log: createLogger('silent'), now: () => now });
    try {
      await built.bridge.maintainStore();
      await built.bridge.idle();
      expect(built.bridge.health().storeCheck).toBeNull();
      now += STORE_CHECK_FIRST_MS;
      await built.bridge.maintainStore();
      await built.bridge.idle();
      const check = built.bridge.health().storeCheck!;
      expect(check.ok).toBe(false);
      expect(`quick_check: ${check.detail}`).toMatch(quickCheckLine);
      summary.add('damaged store: three b-tree pages in the middle overwritten', `doctor: "${store.detail.replace(damaged, '<store>')}"; backup exits 1, no copy left; the background check (${check.tookMs} ms, on a worker thread) reports it to /health`);
    } finally {
      await built.close();
    }
    expect(readFileSync(damaged).equals(before)).toBe(true);
  });
});
