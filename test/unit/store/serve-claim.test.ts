import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLAIM_RETRY_MS, CLAIM_WAIT_MS, claimHeld, claimStore, probeLock, StoreInUseError } from '../../../src/store/store.js';
import { tempFolders } from '../../helpers/temp-folders.js';

/** The claim of one serve per store (src/store/serve-claim.ts), in this process: SQLite's lock refuses a second connection here too. */
const { folder } = tempFolders('mb-claim-');

/** A pause of the claim's retries that takes no time (the test's clock): a held lock is refused after the tries, at once. */
const instant = { pause: (): void => undefined };

/** What claimStore throws, or a failure when it does not. */
function refusal(fn: () => unknown): StoreInUseError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(StoreInUseError);
    return err as StoreInUseError;
  }
  throw new Error('claimStore did not refuse');
}

describe('claimStore', () => {
  it('refuses a second claim while the first is held, naming its holder; taken again once released', () => {
    const dir = folder(0o700);
    const store = join(dir, 'state', 'bridge.sqlite');
    const first = claimStore(store, { listen: '127.0.0.1:0', config: '/a.toml' });
    // The folder is made private, as the store's open makes it; no store file is made.
    expect(statSync(join(dir, 'state')).mode & 0o777).toBe(0o700);
    expect(existsSync(store)).toBe(false);
    first.listening('127.0.0.1:8765');
    const e = refusal(() => claimStore(store, { listen: '127.0.0.1:9999', config: '/b.toml' }, instant));
    expect(e.holder).toMatchObject({ pid: process.pid, listen: '127.0.0.1:8765', config: '/a.toml' });
    expect(e.message).toBe(
      `the store ${store} is in use by another a2a-mailbridge serve (pid ${process.pid}, listening at 127.0.0.1:8765, started with the config /a.toml): two bridges on one store would both read the mailbox and send the same webhooks; stop that bridge first (a2a-mailbridge --config /a.toml stop, or its service; else kill ${process.pid}), or give this config its own store.path`,
    );
    first.release();
    first.release(); // a second release does nothing
    expect(existsSync(`${store}-serve.json`)).toBe(false);
    const again = claimStore(store, { listen: '127.0.0.1:9999', config: '/b.toml' });
    expect(JSON.parse(readFileSync(`${store}-serve.json`, 'utf8'))).toMatchObject({ pid: process.pid, listen: '127.0.0.1:9999', config: '/b.toml' });
    again.release();
  });

  it('two paths to one store (a symlinked folder) meet at one claim', () => {
    const dir = folder(0o700);
    mkdirSync(join(dir, 'real'), { mode: 0o700 });
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    const held = claimStore(join(dir, 'real', 'bridge.sqlite'), { listen: '127.0.0.1:1', config: '/a.toml' });
    try {
      refusal(() => claimStore(join(dir, 'link', 'bridge.sqlite'), { listen: '127.0.0.1:2', config: '/b.toml' }, instant));
    } finally {
      held.release();
    }
  });

  it('a note left by a process that is gone does not hold the store, and is not named while another takes it', () => {
    const dir = folder(0o700);
    const store = join(dir, 'bridge.sqlite');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    writeFileSync(`${store}-serve.json`, JSON.stringify({ pid: dead, listen: '127.0.0.1:1', config: '/old.toml', since: 0 }), { mode: 0o600 });
    writeFileSync(`${store}-serve.lock`, '', { mode: 0o600 });
    const claim = claimStore(store, { listen: '127.0.0.1:2', config: '/new.toml' });
    expect(JSON.parse(readFileSync(`${store}-serve.json`, 'utf8'))).toMatchObject({ pid: process.pid, config: '/new.toml' });
    // A holder that has not written its note yet: the stale note of a dead pid is not believed.
    writeFileSync(`${store}-serve.json`, JSON.stringify({ pid: dead, listen: '127.0.0.1:1', config: '/old.toml', since: 0 }));
    const e = refusal(() => claimStore(store, { listen: '127.0.0.1:3', config: '/third.toml' }, instant));
    expect(e.holder).toBeNull();
    expect(e.message).toContain('(a process starting this instant, or one whose note is unreadable)');
    claim.release();
  });

  it('a store path longer than a Unix socket path may be (108 bytes) takes a claim all the same', () => {
    const dir = folder(0o700);
    const deep = join(dir, 'a'.repeat(60), 'b'.repeat(60));
    const store = join(deep, 'bridge.sqlite');
    expect(`${store}-serve.lock`.length).toBeGreaterThan(108);
    const claim = claimStore(store, { listen: '127.0.0.1:1', config: '/a.toml' });
    refusal(() => claimStore(store, { listen: '127.0.0.1:2', config: '/b.toml' }, instant));
    expect(statSync(`${store}-serve.lock`).mode & 0o777).toBe(0o600);
    claim.release();
  });

  it('a claim started while a probe (claimHeld\'s) holds the lock for a moment waits for it and is taken, not refused', () => {
    const dir = folder(0o700);
    const store = join(dir, 'bridge.sqlite');
    writeFileSync(`${store}-serve.lock`, '', { mode: 0o600 });
    // The probe of status/stop/doctor/tasks, caught holding the lock: what serve meets starting that instant.
    const probe = probeLock(`${store}-serve.lock`);
    if (probe === null || probe === 'busy') throw new Error(`the probe did not take the free lock: ${probe}`);
    // claimHeld never waits: it answers at once that the lock is busy.
    expect(claimHeld(store)).toEqual({ held: true, holder: null });
    const pauses: number[] = [];
    const claim = claimStore(store, { listen: '127.0.0.1:1', config: '/a.toml' }, {
      pause: (ms) => {
        pauses.push(ms);
        probe.release(); // the probe lets go, as it does microseconds after it took the lock
      },
    });
    expect(pauses).toEqual([CLAIM_RETRY_MS]);
    expect(JSON.parse(readFileSync(`${store}-serve.json`, 'utf8'))).toMatchObject({ pid: process.pid, config: '/a.toml' });
    claim.release();
  });

  it('a real holder: the second claim tries for CLAIM_WAIT_MS on its clock, then refuses', () => {
    const dir = folder(0o700);
    const store = join(dir, 'bridge.sqlite');
    const first = claimStore(store, { listen: '127.0.0.1:1', config: '/a.toml' });
    const pauses: number[] = [];
    const e = refusal(() => claimStore(store, { listen: '127.0.0.1:2', config: '/b.toml' }, { pause: (ms) => pauses.push(ms) }));
    expect(e.holder).toMatchObject({ pid: process.pid, config: '/a.toml' });
    expect(pauses.reduce((a, b) => a + b, 0)).toBe(CLAIM_WAIT_MS);
    expect(pauses.length).toBe(Math.ceil(CLAIM_WAIT_MS / CLAIM_RETRY_MS));
    first.release();
  });
});

/**
 * The lock left `<store>-serve.lock-journal` beside it while serve ran (fresh-user trial): its
 * BEGIN IMMEDIATE on the empty lock database opened a rollback journal on disk. The lock keeps its
 * journal in memory; it never commits, so a holder killed -9 leaves an empty lock file and a free
 * claim.
 */
describe('the claim leaves no journal file', () => {
  it('held, probed, released: only the lock file and the note', () => {
    const dir = folder(0o700);
    const store = join(dir, 'bridge.sqlite');
    const claim = claimStore(store, { listen: '127.0.0.1:1', config: '/a.toml' });
    expect(readdirSync(dir).sort()).toEqual(['bridge.sqlite-serve.json', 'bridge.sqlite-serve.lock']);
    expect(claimHeld(store)).toMatchObject({ held: true });
    claim.release();
    const probe = probeLock(`${store}-serve.lock`);
    if (probe === null || probe === 'busy') throw new Error(`the probe did not take the free lock: ${probe}`);
    expect(readdirSync(dir)).toEqual(['bridge.sqlite-serve.lock']);
    probe.release();
    expect(statSync(`${store}-serve.lock`).size).toBe(0);
  });

  it('a holder killed -9 leaves an empty lock, no journal, and the claim free', async () => {
    const dir = folder(0o700);
    const store = join(dir, 'bridge.sqlite');
    const module = resolve('src/store/serve-claim.ts');
    // The claim kept referenced (as serve keeps it): a claim collected as garbage closes its connection, and the lock with it.
    const code = `const { claimStore } = await import(${JSON.stringify(module)}); globalThis.claim = claimStore(${JSON.stringify(store)}, { listen: '127.0.0.1:1', config: '/a.toml' }); process.stdout.write('held\\n'); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [first] = (await once(child.stdout, 'data')) as [Buffer];
    expect(first.toString()).toBe('held\n');
    expect(claimHeld(store)).toMatchObject({ held: true, holder: { pid: child.pid } });
    expect(readdirSync(dir).sort()).toEqual(['bridge.sqlite-serve.json', 'bridge.sqlite-serve.lock']);
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(claimHeld(store)).toEqual({ held: false });
    expect(statSync(`${store}-serve.lock`).size).toBe(0);
    const again = claimStore(store, { listen: '127.0.0.1:2', config: '/b.toml' });
    expect(readdirSync(dir).sort()).toEqual(['bridge.sqlite-serve.json', 'bridge.sqlite-serve.lock']);
    again.release();
  });
});
