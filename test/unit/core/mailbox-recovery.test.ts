/**
 * A mailbox that fails and comes back (fresh-user trial: the Maildir's `cur/` deleted and made
 * again): the first check after it is back comes at once — by the folder's watch with
 * `mailbox.watch`, and a failing mailbox is due again after a short backoff (1 s, doubling, at most
 * `check_interval_s`) rather than the whole interval — and a run of failures is logged once, not
 * once per check (the watcher's follow-up check failed again 2 ms later).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../../../src/app.js';
import type { Config } from '../../../src/config/config.js';
import { loadConfig } from '../../../src/config/config.js';
import { CHECK_LOG_EVERY_MS } from '../../../src/core/check-log.js';
import { FAILING_RECHECK_MIN_MS, RefreshDue } from '../../../src/core/refresh-due.js';
import { startWatcher } from '../../../src/core/watcher.js';
import { createLogger } from '../../../src/log.js';
import { Store } from '../../../src/store/store.js';
import { maildirFeed, type ChangeCause } from '../../../src/uplink/change-feed.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function configDir(): ConfigDir {
  const c = makeConfigDir(minimalToml());
  dirs.push(c.dir);
  return c;
}

const LEVELS = { warn: 40, info: 30 } as const;

/** A log whose lines a test reads, and waits on: `next(msg)` resolves at the next line with that message. */
function logLines() {
  const lines: { msg: string; level: number; err?: string; suppressedSinceLast?: number }[] = [];
  const waiting: { msg: string; resolve: () => void }[] = [];
  const log = createLogger('debug', {
    write: (s: string) => {
      const line = JSON.parse(s) as (typeof lines)[number];
      lines.push(line);
      for (const w of waiting.splice(0).filter((x) => (x.msg === line.msg ? (x.resolve(), false) : true))) waiting.push(w);
    },
  });
  return {
    log,
    lines,
    next: (msg: string): Promise<void> => new Promise((resolve) => waiting.push({ msg, resolve })),
    count: (msg: string, level?: 'warn' | 'info') => lines.filter((l) => l.msg === msg && (level === undefined || l.level === LEVELS[level])).length,
  };
}

describe('a failing mailbox is checked again on a short backoff', () => {
  it('is due 1 s after the first failure, then after as long as it has failed, at most check_interval_s; after a success, check_interval_s', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mb-due-')), 'bridge.sqlite');
    dirs.push(join(path, '..'));
    const store = Store.open(path);
    const folder = '/maildir';
    let now = Date.parse('2026-12-03T09:00:00Z');
    const config = { mailbox: { checkIntervalMs: 15_000 } } as Config;
    const due = new RefreshDue({ store, config, mailbox: { folder, kind: 'maildir' } as never, now: () => now }, []);
    const fail = (): void => void store.tx((tx) => tx.mailbox.recordCheck(folder, { at: now, ok: false, result: 'failed', error: 'missing cur/' }));
    const dueAfter = (ms: number): void => {
      const last = now;
      now = last + ms - 1;
      expect(due.checkDue()).toBe(false);
      now = last + ms;
      expect(due.checkDue()).toBe(true);
    };
    fail();
    dueAfter(FAILING_RECHECK_MIN_MS);
    expect(FAILING_RECHECK_MIN_MS).toBe(1000);
    fail(); // failing for 1 s
    dueAfter(1000);
    fail(); // for 2 s
    dueAfter(2000);
    fail(); // for 4 s
    dueAfter(4000);
    fail(); // for 8 s
    dueAfter(8000);
    fail(); // for 16 s: no more often than a healthy mailbox
    dueAfter(15_000);
    store.tx((tx) => tx.mailbox.recordCheck(folder, { at: now, ok: true, result: 'ok' }));
    dueAfter(15_000);
    store.close();
  });

  it('an IMAP mailbox that fails is checked again only after check_interval_s (a refused login tried within seconds can lock the account)', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mb-due-')), 'bridge.sqlite');
    dirs.push(join(path, '..'));
    const store = Store.open(path);
    const folder = 'INBOX';
    let now = Date.parse('2026-12-03T09:00:00Z');
    const config = { mailbox: { checkIntervalMs: 15_000 } } as Config;
    const due = new RefreshDue({ store, config, mailbox: { folder, kind: 'imap' } as never, now: () => now }, []);
    for (let i = 0; i < 3; i++) {
      store.tx((tx) => tx.mailbox.recordCheck(folder, { at: now, ok: false, result: 'failed', error: 'authentication failed' }));
      now += 14_999;
      expect(due.checkDue()).toBe(false);
      now += 1;
      expect(due.checkDue()).toBe(true);
    }
    store.close();
  });
});

describe("a run of mailbox failures is logged once", () => {
  it('logs the first failure of a run and each new error at warn, a repeat at debug, and the end once', async () => {
    const c = configDir();
    const config = loadConfig(c.configPath);
    const maildir = config.mailbox.maildirPath!;
    let now = Date.parse('2026-12-03T09:00:00Z');
    const { log, lines, count } = logLines();
    const built = buildBridge(config, { log, now: () => now });
    try {
      const check = async (ok: boolean): Promise<void> => {
        now += 1000;
        expect((await built.bridge.checkNow()).ok).toBe(ok);
      };
      await check(false); // no folder
      await check(false); // the same error: the watcher's follow-up check, the next tick
      expect(count('mailbox check failed')).toBe(1);
      expect(count('mailbox check failed again')).toBe(1);
      mkdirSync(join(maildir, 'new'), { recursive: true });
      now += CHECK_LOG_EVERY_MS; // (within a minute, a new error is held back: the next test)
      await check(false); // another error: "missing cur/"
      expect(lines.filter((l) => l.msg === 'mailbox check failed').map((l) => l.err)).toEqual([expect.stringContaining(maildir), expect.stringMatching(/cur\//)]);
      mkdirSync(join(maildir, 'cur'));
      await check(true);
      await check(true);
      expect(count('mailbox check ok again')).toBe(1);
      rmSync(join(maildir, 'cur'), { recursive: true });
      now += CHECK_LOG_EVERY_MS;
      await check(false); // a new run: logged again
      expect(count('mailbox check failed')).toBe(3);
      expect(lines.filter((l) => l.msg === 'mailbox check failed').every((l) => l.level === 40)).toBe(true);
    } finally {
      await built.close();
    }
  });
});

describe('a mailbox that flaps is logged at most once a minute', () => {
  /** A bridge on a Maildir with new/ and tmp/, whose checks the test runs on its clock; cur/ comes and goes. */
  async function flapping(body: (o: { check: (ok: boolean, after: number) => Promise<void>; cur: (there: boolean) => void; part: (sub: string, there: boolean) => void; l: ReturnType<typeof logLines> }) => Promise<void>): Promise<void> {
    const config = loadConfig(configDir().configPath);
    const maildir = config.mailbox.maildirPath!;
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
    let now = Date.parse('2026-12-03T09:00:00Z');
    const l = logLines();
    const built = buildBridge(config, { log: l.log, now: () => now });
    const part = (sub: string, there: boolean): void => {
      if (there) mkdirSync(join(maildir, sub), { recursive: true });
      else rmSync(join(maildir, sub), { recursive: true, force: true });
    };
    try {
      await body({
        check: async (ok, after) => {
          now += after;
          expect((await built.bridge.checkNow()).ok).toBe(ok);
        },
        cur: (there) => part('cur', there),
        part,
        l,
      });
    } finally {
      await built.close();
    }
  }

  it('a failure and a success in turn: one pair of lines a minute, the next failure saying how many were held back', async () => {
    await flapping(async ({ check, cur, l }) => {
      for (let i = 0; i < 100; i++) {
        cur(false);
        await check(false, 100);
        cur(true);
        await check(true, 100);
      }
      // 20 s of flapping: the first failure and its end, at once.
      expect(l.count('mailbox check failed', 'warn')).toBe(1);
      expect(l.count('mailbox check ok again', 'info')).toBe(1);
      expect(l.lines.findIndex((x) => x.msg === 'mailbox check ok again')).toBeGreaterThan(l.lines.findIndex((x) => x.msg === 'mailbox check failed'));
      cur(false);
      await check(false, CHECK_LOG_EVERY_MS);
      cur(true);
      await check(true, 100);
      expect(l.count('mailbox check failed', 'warn')).toBe(2);
      expect(l.count('mailbox check ok again', 'info')).toBe(2);
      expect(l.lines.filter((x) => x.msg === 'mailbox check failed' && x.level === 40).map((x) => x.suppressedSinceLast)).toEqual([undefined, 99]);
    });
  });

  it('two errors in turn: the first at once, the rest held back for the minute', async () => {
    await flapping(async ({ check, part, l }) => {
      for (let i = 0; i < 50; i++) {
        part('new', false);
        part('cur', true);
        await check(false, 100); // no new/
        part('new', true);
        part('cur', false);
        await check(false, 100); // no cur/
      }
      expect(l.count('mailbox check failed', 'warn')).toBe(1);
      await check(false, CHECK_LOG_EVERY_MS); // the same error as the last check: a repeat, at debug
      expect(l.count('mailbox check failed', 'warn')).toBe(1);
      part('new', false);
      part('cur', true);
      await check(false, 100); // the other one, a minute on: logged, with the count
      expect(l.lines.filter((x) => x.msg === 'mailbox check failed' && x.level === 40).map((x) => x.suppressedSinceLast)).toEqual([undefined, 99]);
      part('new', true);
      await check(true, 100);
      expect(l.count('mailbox check ok again', 'info')).toBe(1);
    });
  });

  it('a run that began while lines were held back is logged once the minute is over, and then its end', async () => {
    await flapping(async ({ check, cur, l }) => {
      cur(false);
      await check(false, 100);
      cur(true);
      await check(true, 100);
      cur(false);
      await check(false, 10_000); // a new run, 10 s later: held back
      await check(false, 10_000);
      expect(l.count('mailbox check failed', 'warn')).toBe(1);
      await check(false, CHECK_LOG_EVERY_MS); // still failing a minute after the last line: logged now
      expect(l.count('mailbox check failed', 'warn')).toBe(2);
      await check(false, 1000);
      expect(l.count('mailbox check failed', 'warn')).toBe(2);
      cur(true);
      await check(true, 1000);
      expect(l.count('mailbox check ok again', 'info')).toBe(2);
    });
  });
});

describe('the Maildir watch after cur/ is deleted and made again', () => {
  it("watches the folder itself: cur/ made again is watched again and checked at once, without new mail or the tick", async () => {
    const c = configDir();
    const config = loadConfig(c.configPath);
    const maildir = config.mailbox.maildirPath!;
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(maildir, sub), { recursive: true });
    for (const name of ['1.a.host:2,S', '2.b.host:2,S']) writeFileSync(join(maildir, 'cur', name), 'Subject: not ours\r\n\r\nx\r\n');
    const { log, next, count } = logLines();
    const built = buildBridge(config, { log });
    // The tick (an hour) never runs here: only the feed's signals start checks.
    const firstCheck = next('mailbox check done');
    const watcher = startWatcher(built.bridge, maildirFeed(maildir, log), 3_600_000);
    try {
      await firstCheck;
      const failed = next('mailbox check failed');
      rmSync(join(maildir, 'cur'), { recursive: true });
      await failed;
      await built.bridge.idle();
      const back = next('mailbox check ok again');
      mkdirSync(join(maildir, 'cur'));
      await back;
      // However many checks the deletion's events started, the failure was logged once.
      expect(count('mailbox check failed')).toBe(1);
      expect(built.bridge.ctx.store.mailbox.state(built.bridge.ctx.mailbox.folder)).toMatchObject({ errorSince: null, lastError: null });
    } finally {
      await watcher.stop();
      await built.close();
    }
  });

  it('signals a catch-up after each change of new/ or cur/ themselves, and hears files in the cur/ made again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mb-feed-'));
    dirs.push(dir);
    for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub));
    let waiter: { cause: ChangeCause; resolve: () => void } | null = null;
    const next = (cause: ChangeCause): Promise<void> => new Promise((resolve) => (waiter = { cause, resolve }));
    const onChange = (cause: ChangeCause): void => {
      if (waiter?.cause !== cause) return;
      const w = waiter;
      waiter = null;
      w.resolve();
    };
    const abort = new AbortController();
    let connected = next('connected');
    const run = maildirFeed(dir, createLogger('silent')).run(onChange, abort.signal);
    try {
      await connected;
      connected = next('connected');
      rmSync(join(dir, 'cur'), { recursive: true });
      await connected; // watched again at once: new/ and the folder (cur/ is missing)
      connected = next('connected');
      mkdirSync(join(dir, 'cur'));
      await connected; // the catch-up signal for the cur/ made again
      const exists = next('exists');
      writeFileSync(join(dir, 'cur', '3.c.host:2,S'), 'x');
      await exists; // and files in it are heard
    } finally {
      abort.abort();
      await run;
    }
  });
});
