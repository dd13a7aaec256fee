import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { doctor } from '../../../src/cli/doctor.js';
import { loadConfig } from '../../../src/config/config.js';
import { dataPlaceProblem, prepareDataPlaces, tightenDataFiles } from '../../../src/config/data-place.js';
import { Store } from '../../../src/store/store.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { NOBODY, tempFolders } from '../../helpers/temp-folders.js';

/**
 * The store (task text, reply tokens) and the log must be where no other user can read or swap
 * them (src/config/data-place.ts): `serve` refuses to start otherwise, and `doctor` says so.
 */
const { folder, removeAfter } = tempFolders('mb-data-');
/** `name` made in `parent` with `mode` (mkdir's umask undone). */
function sub(parent: string, name: string, mode: number): string {
  const d = join(parent, name);
  mkdirSync(d);
  chmodSync(d, mode);
  return d;
}
const uid = process.getuid?.() ?? 0;

describe('the store and log places', () => {
  it.runIf(uid === 0)('refuses a store whose folder another user made in a sticky folder, as a config linked from there would use', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const shared = folder(0o1777);
    // Relative paths resolve against the link's folder: state/ there is the attacker's.
    const link = join(shared, 'config.toml');
    symlinkSync(c.configPath, link);
    const state = sub(shared, 'state', 0o777);
    chownSync(state, NOBODY, NOBODY);
    const config = loadConfig(link, { skipSecrets: true });
    expect(config.store.path).toBe(join(state, 'bridge.sqlite'));
    expect(() => prepareDataPlaces(config.store.path, config.log.file)).toThrow(
      `store.path: ${state}, the store's folder, is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could read or replace the store; set store.path to a path in a folder of yours (mkdir -m 700 <folder>), or move ${state} aside`,
    );
  });

  it.runIf(uid === 0)('refuses, on the first start, a store folder another user makes in a sticky folder between the check and the mkdir', () => {
    const shared = folder(0o1777);
    const state = join(shared, 'state');
    // The other user's mkdir lands after the place was checked (state/ missing) and before ours.
    const race = (dir: string): void => {
      if (dir !== state) return;
      mkdirSync(dir);
      chmodSync(dir, 0o700);
      chownSync(dir, NOBODY, NOBODY);
    };
    expect(() => prepareDataPlaces(join(state, 'bridge.sqlite'), undefined, { beforeMkdir: race })).toThrow(
      `store.path: ${state}, the store's folder, was made by uid ${NOBODY} while the bridge was creating it, neither this user (uid ${uid}) nor root, so its owner could read or replace the store; move ${state} aside (another user may have made it; do not use what it holds), or set store.path to a path in a folder of yours`,
    );
    expect(existsSync(join(state, 'bridge.sqlite'))).toBe(false);
  });

  it('makes missing store and log folders itself, mode 0700, and refuses a symlink put in their stead', () => {
    const shared = folder(0o1777);
    const store = join(shared, 'a', 'state', 'bridge.sqlite');
    const log = join(shared, 'logs', 'bridge.log');
    prepareDataPlaces(store, log);
    for (const d of [join(shared, 'a'), join(shared, 'a', 'state'), join(shared, 'logs')]) expect(statSync(d).mode & 0o7777).toBe(0o700);
    const logs2 = join(shared, 'logs2');
    const ours = folder(0o700);
    const link = (dir: string): void => symlinkSync(ours, dir);
    expect(() => prepareDataPlaces(store, join(logs2, 'bridge.log'), { beforeMkdir: link })).toThrow(
      `log.file: ${logs2}, the log's folder, was missing and is now a symlink made by someone else while the bridge was creating it; move ${logs2} aside`,
    );
  });

  it('refuses a store folder others can write unless it is sticky', () => {
    const dir = folder(0o777);
    const store = join(dir, 'mailbridge.sqlite');
    expect(() => prepareDataPlaces(store, undefined)).toThrow(`store.path: ${dir}, the store's folder, is writable by others (mode 0777), so they could replace the store; run: chmod go-w ${dir}`);
    chmodSync(dir, 0o1777);
    expect(() => prepareDataPlaces(store, undefined)).not.toThrow();
  });

  it.runIf(uid === 0)("refuses a store's -wal file another user owns, and a store file others can write", () => {
    const dir = folder(0o700);
    const store = join(dir, 'mailbridge.sqlite');
    writeFileSync(`${store}-wal`, '', { mode: 0o600 });
    chownSync(`${store}-wal`, NOBODY, NOBODY);
    expect(() => prepareDataPlaces(store, undefined)).toThrow(`store.path: ${store}-wal is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could read or change the store; move ${store}-wal aside`);
    rmSync(`${store}-wal`);
    writeFileSync(store, '');
    chmodSync(store, 0o666);
    expect(() => prepareDataPlaces(store, undefined)).toThrow(`store.path: ${store} is writable by others (mode 0666), so they could change the store; run: chmod go-w ${store}`);
    chmodSync(store, 0o600);
    expect(() => prepareDataPlaces(store, undefined)).not.toThrow();
  });

  it('refuses a log folder others can write, naming log.file', () => {
    const ours = folder(0o700);
    const logs = sub(folder(0o755), 'logs', 0o777);
    expect(() => prepareDataPlaces(join(ours, 'm.sqlite'), join(logs, 'bridge.log'))).toThrow(`log.file: ${logs}, the log's folder, is writable by others (mode 0777), so they could replace the log; run: chmod go-w ${logs}`);
  });

  it("refuses the log's numbered files (what pino-roll writes and rotates) as the store's: writable by others, or another user's", () => {
    const logs = folder(0o700);
    const file = join(logs, 'bridge.log');
    const rotated = join(logs, 'bridge.3.log');
    writeFileSync(rotated, '');
    chmodSync(rotated, 0o666);
    expect(() => prepareDataPlaces(join(folder(0o700), 'm.sqlite'), file)).toThrow(`log.file: ${rotated} is writable by others (mode 0666), so they could change the log; run: chmod go-w ${rotated}`);
    chmodSync(rotated, 0o600);
    if (uid === 0) {
      chownSync(rotated, NOBODY, NOBODY);
      expect(dataPlaceProblem(file, 'log', 'log.file')?.problem).toBe(`${rotated} is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could read or change the log`);
      chownSync(rotated, uid, uid);
    }
    expect(dataPlaceProblem(file, 'log', 'log.file')).toBeNull();
  });

  it("doctor warns of a store file readable by others, with the shell-quoted chmod 600", async () => {
    const c = makeConfigDir(minimalToml().replace('state/bridge.sqlite', "my state/bridge.sqlite"));
    removeAfter(c.dir);
    const store = join(c.dir, 'my state', 'bridge.sqlite');
    Store.open(store).close();
    expect((await doctor(c.configPath)).checks.find((x) => x.name === 'store mode')).toBeUndefined();
    chmodSync(store, 0o644);
    // The store check's read-only open makes a -wal of the store file's mode: it is named too.
    const r = await doctor(c.configPath);
    expect(r.checks.find((x) => x.name === 'store mode')).toEqual({
      name: 'store mode',
      status: 'warn',
      detail: `${store}, ${store}-wal are readable by others (mode 0644); the store holds the agents' answers, task text and reply tokens`,
      fix: `serve makes them 0600 when it next starts; or now: chmod 600 '${store}' '${store}-wal'`,
    });
    expect(r.checks.find((x) => x.name === 'store')?.status).toBe('ok');
  });

  it.runIf(uid === 0)("doctor fails the store check on another user's store folder (the store not made yet)", async () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const state = sub(c.dir, 'state', 0o700);
    chownSync(state, NOBODY, NOBODY);
    const r = await doctor(c.configPath);
    expect(r.checks.find((x) => x.name === 'store')).toEqual({
      name: 'store',
      status: 'fail',
      detail: `${state}, the store's folder, is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could read or replace the store`,
      fix: `set store.path to a path in a folder of yours (mkdir -m 700 <folder>), or move ${state} aside`,
    });
  });

  it("tightenDataFiles makes this user's files 0600, whatever their mode and the umask; a symlink is not followed, another user's file is left", () => {
    const dir = folder(0o700);
    const store = join(dir, 'bridge.sqlite');
    const outside = join(dir, 'elsewhere');
    for (const [f, mode] of [[store, 0o644], [`${store}-wal`, 0o640], [outside, 0o644], [`${store}-serve.json`, 0o600]] as const) {
      writeFileSync(f, 'x');
      chmodSync(f, mode); // the mode set outright: the umask does not matter
    }
    symlinkSync(outside, `${store}-shm`);
    const files = [store, `${store}-wal`, `${store}-shm`, `${store}-serve.lock`, `${store}-serve.json`];
    if (uid === 0) {
      writeFileSync(`${store}-serve.lock`, '');
      chmodSync(`${store}-serve.lock`, 0o644);
      chownSync(`${store}-serve.lock`, NOBODY, NOBODY);
    }
    expect(tightenDataFiles(files)).toEqual([store, `${store}-wal`]);
    expect([store, `${store}-wal`, `${store}-serve.json`].map((f) => statSync(f).mode & 0o777)).toEqual([0o600, 0o600, 0o600]);
    // The link's target is not changed through it, and the link is still a link.
    expect(statSync(outside).mode & 0o777).toBe(0o644);
    expect(lstatSync(`${store}-shm`).isSymbolicLink()).toBe(true);
    if (uid === 0) expect(statSync(`${store}-serve.lock`).mode & 0o777).toBe(0o644);
    expect(tightenDataFiles(files)).toEqual([]);
  });
});
