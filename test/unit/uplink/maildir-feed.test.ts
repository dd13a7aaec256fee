/**
 * The Maildir change feed under whoever can write into the Maildir (attack review: a loop of
 * `rmdir cur; mkdir cur`, or of `touch cur`, made the feed re-add its watches in a loop that froze
 * serve's event loop and left an abort listener per round on the watcher's signal), and when the
 * Maildir folder itself is moved away and made again. Real fs.watch on a temp Maildir; the waits
 * between rounds run on an injected clock that needs no waiting.
 */
import { getEventListeners } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log.js';
import { maildirFeed, REWATCH_MAX_MS, REWATCH_MIN_MS, type ChangeCause, type FeedClock } from '../../../src/uplink/change-feed.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function maildir(make = true): string {
  const parent = mkdtempSync(join(tmpdir(), 'mb-feed-'));
  dirs.push(parent);
  const dir = join(parent, 'Maildir');
  if (make) for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
  return dir;
}

/** A clock whose timers fire on the next turn of the event loop, moving its time on by their delay. */
function instantClock() {
  let now = 0;
  const delays: number[] = [];
  const clock: FeedClock = {
    now: () => now,
    setTimeout(fn, ms) {
      delays.push(ms);
      const handle = { cleared: false };
      setImmediate(() => {
        if (handle.cleared) return;
        now += ms;
        fn();
      });
      return handle;
    },
    clearTimeout: (handle) => void ((handle as { cleared: boolean }).cleared = true),
  };
  return { clock, delays, now: () => now, pass: (ms: number) => void (now += ms) };
}

/** A feed run whose signals a test reads and waits on, with the log lines it wrote. */
function feedRun(dir: string, clock: FeedClock) {
  const causes: ChangeCause[] = [];
  const logged: string[] = [];
  const waiting: { test: () => boolean; resolve: () => void }[] = [];
  const wake = (): void => {
    for (const w of waiting.splice(0)) (w.test() ? w.resolve : () => waiting.push(w))();
  };
  const log = createLogger('info', { write: (s: string) => (logged.push((JSON.parse(s) as { msg: string }).msg), wake()) });
  const abort = new AbortController();
  const run = maildirFeed(dir, log, clock).run((cause) => (causes.push(cause), wake()), abort.signal);
  const until = (test: () => boolean): Promise<void> => (test() ? Promise.resolve() : new Promise((resolve) => waiting.push({ test, resolve })));
  const count = (cause: ChangeCause): number => causes.filter((c) => c === cause).length;
  return {
    causes,
    logged,
    count,
    /** Resolves once `cause` has been signalled `n` times in all. */
    signalled: (cause: ChangeCause, n: number) => until(() => count(cause) >= n),
    loggedTimes: (msg: string, n: number) => until(() => logged.filter((m) => m === msg).length >= n),
    listeners: () => getEventListeners(abort.signal, 'abort').length,
    stop: async () => {
      abort.abort();
      await run;
    },
  };
}

describe('the Maildir feed under a writer who keeps changing the folder', () => {
  it('leaves at most one abort listener on the signal, however many rounds of watches ended', async () => {
    const dir = maildir();
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      for (let round = 1; round <= 30; round++) {
        await f.signalled('connected', round);
        expect(f.listeners()).toBeLessThanOrEqual(1);
        rmSync(join(dir, 'cur'), { recursive: true });
        mkdirSync(join(dir, 'cur'));
      }
    } finally {
      await f.stop();
    }
    expect(f.listeners()).toBe(0);
  });

  it("leaves no abort listener behind its backoff waits (the Maildir missing: each round fails)", async () => {
    const dir = maildir(false);
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      await f.loggedTimes('Maildir watch could not start', 3);
      // The failed round's own listener, until its finally: not those of the two waits before it.
      expect(f.listeners()).toBeLessThanOrEqual(1);
    } finally {
      await f.stop();
    }
    expect(f.listeners()).toBe(0);
  });

  it('starts no new round for a touch or chmod of cur/ (an attribute change makes, removes or renames nothing)', { timeout: 10_000 }, async () => {
    const dir = maildir();
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      await f.signalled('connected', 1);
      for (let i = 0; i < 40; i++) {
        utimesSync(join(dir, 'cur'), new Date(), new Date());
        chmodSync(join(dir, 'cur'), i % 2 ? 0o755 : 0o700);
        utimesSync(join(dir, 'new'), new Date(), new Date());
        utimesSync(dir, new Date(), new Date());
        // A delivery after them: once new/'s watch has heard it, the folder's watch has heard those before (one inotify queue).
        const exists = f.count('exists');
        writeFileSync(join(dir, 'tmp', `${i}.a.host`), 'x');
        renameSync(join(dir, 'tmp', `${i}.a.host`), join(dir, 'new', `${i}.a.host`));
        await f.signalled('exists', exists + 1);
      }
      // A change that does end the round: the next round is the second.
      rmSync(join(dir, 'cur'), { recursive: true });
      mkdirSync(join(dir, 'cur'));
      await f.signalled('connected', 2);
      expect(f.count('connected')).toBe(2);
      expect(t.delays).toEqual([REWATCH_MIN_MS]);
    } finally {
      await f.stop();
    }
  });

  it('pauses its watches for a flood of events faster than they are handed over (which would hold the event loop), says so, and watches again', async () => {
    const dir = maildir();
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      await f.signalled('connected', 1);
      // Attribute changes of two subfolders in turn: heard by the folder's watch and each one's own, never merged by the kernel.
      for (let i = 0; i < 400; i++) for (const sub of ['cur', 'new']) utimesSync(join(dir, sub), new Date(), new Date());
      await f.signalled('connected', 2);
      expect(f.logged).toContain('Maildir watch paused: too many file events in a second; watching again shortly');
      expect(t.delays).toEqual([REWATCH_MIN_MS]);
    } finally {
      await f.stop();
    }
  });

  it('answers a loop of rmdir/mkdir cur with rounds 100 ms apart, doubling to 2 s: a bounded number of rounds', async () => {
    const dir = maildir();
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      // The writer deletes and makes cur/ again as soon as each round has begun, for 10 s of the clock.
      let rounds = 0;
      while (t.now() < 10_000 && rounds < 60) {
        await f.signalled('connected', ++rounds);
        rmSync(join(dir, 'cur'), { recursive: true });
        mkdirSync(join(dir, 'cur'));
      }
      expect(rounds).toBeLessThanOrEqual(10);
      expect(t.delays.slice(0, 7)).toEqual([100, 200, 400, 800, 1600, REWATCH_MAX_MS, REWATCH_MAX_MS]);
    } finally {
      await f.stop();
    }
  });
});

describe('the Maildir feed after a genuine repair', () => {
  it('watches cur/ made again after 100-200 ms and signals the catch-up check, and hears files in it', async () => {
    const dir = maildir();
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      await f.signalled('connected', 1);
      t.pass(60_000); // the Maildir was quiet for a minute
      rmSync(join(dir, 'cur'), { recursive: true });
      await f.signalled('connected', 2); // new/ and the folder watched again (cur/ is missing)
      t.pass(30_000); // someone notices and makes it again
      mkdirSync(join(dir, 'cur'));
      await f.signalled('connected', 3); // the catch-up check for the cur/ made again
      // At once after a deletion (a streak of one each time); `rm -r cur && mkdir cur` with no pause: 200 ms.
      t.pass(60_000);
      rmSync(join(dir, 'cur'), { recursive: true });
      await f.signalled('connected', 4);
      mkdirSync(join(dir, 'cur'));
      await f.signalled('connected', 5);
      expect(t.delays).toEqual([100, 100, 100, 200]);
      const exists = f.count('exists');
      writeFileSync(join(dir, 'cur', '3.c.host:2,S'), 'x');
      await f.signalled('exists', exists + 1);
    } finally {
      await f.stop();
    }
  });

  it('follows the configured path when the Maildir folder is moved away and a new one made there', { timeout: 10_000 }, async () => {
    const dir = maildir();
    const t = instantClock();
    const f = feedRun(dir, t.clock);
    try {
      await f.signalled('connected', 1);
      renameSync(dir, `${dir}.old`);
      for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
      await f.signalled('connected', 2); // the folder's watch heard its own move: the path names another folder
      const exists = f.count('exists');
      writeFileSync(join(dir, 'tmp', '4.d.host'), 'x');
      renameSync(join(dir, 'tmp', '4.d.host'), join(dir, 'new', '4.d.host'));
      await f.signalled('exists', exists + 1); // a delivery to the new Maildir is heard
    } finally {
      await f.stop();
    }
  });
});
