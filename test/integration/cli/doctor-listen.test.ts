import { mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { doctor } from '../../../src/cli/doctor.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { StoreInUseError } from '../../../src/store/store.js';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * doctor's `listen` check (src/cli/doctor-listen.ts) and the claim of startApp, in this process:
 * an address another program holds fails the check; this config's running bridge there is `ok`;
 * another config's bridge there fails; a second startApp on the store of a running one is refused.
 */
const dirs: ConfigDir[] = [];
let app: App | undefined;
let taken: Server | undefined;
/** The connections `taken` accepted (doctor's GET /health): it answers none, and closes them at the end. */
const held = new Set<Socket>();
afterEach(async () => {
  await app?.close();
  app = undefined;
  for (const s of held) s.destroy();
  await new Promise<void>((resolve) => (taken ? taken.close(() => resolve()) : resolve()));
  taken = undefined;
});
afterAll(() => {
  for (const d of dirs) rmSync(d.dir, { recursive: true, force: true });
});

function config(listen: string, store?: string): ConfigDir {
  let toml = minimalToml({ listen });
  if (store) toml = toml.replace('path = "state/bridge.sqlite"', `path = "${store}"`);
  const c = makeConfigDir(toml);
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(join(c.dir, 'Maildir', sub), { recursive: true });
  dirs.push(c);
  return c;
}

const listenCheck = async (c: ConfigDir) => (await doctor(c.configPath)).checks.find((x) => x.name === 'listen');

describe('doctor: can server.listen be bound', () => {
  it("port 0: ok, and names the port this config's running bridge listens at (its store's claim notes it)", async () => {
    const c = config('127.0.0.1:0');
    expect(await listenCheck(c)).toEqual({ name: 'listen', status: 'ok', detail: '127.0.0.1:0: port 0, a free port is picked at each start' });
    app = await startApp(loadConfig(c.configPath), { log: createLogger('silent') });
    const port = (app.server.server.address() as { port: number }).port;
    expect(await listenCheck(c)).toEqual({ name: 'listen', status: 'ok', detail: `127.0.0.1:0: port 0, a free port is picked at each start; this config's bridge is running at http://127.0.0.1:${port}` });
  });

  it('port 0: the Hermes snippet has the running bridge\'s URL; with none running, no URL at :0 but how to find the port', async () => {
    const c = config('127.0.0.1:0');
    const stopped = (await doctor(c.configPath)).hermes!;
    expect(stopped.agents).toEqual([{ name: 'grok', url: null }]);
    expect(stopped.yaml).not.toContain(':0/');
    expect(stopped.yaml).toContain('    url: http://127.0.0.1:<port>/agents/grok\n');
    expect(stopped.yaml).toContain(`bridge is not running, so there is no URL yet (<port> below). To learn the port, start it:\n#   a2a-mailbridge --config ${c.configPath} serve\n`);
    app = await startApp(loadConfig(c.configPath), { log: createLogger('silent') });
    const port = (app.server.server.address() as { port: number }).port;
    const running = (await doctor(c.configPath)).hermes!;
    expect(running.agents).toEqual([{ name: 'grok', url: `http://127.0.0.1:${port}/agents/grok` }]);
    expect(running.yaml).toContain(`# server.listen has port 0: ${port} is the port this config's running bridge picked when it started.`);
    expect(running.yaml).toContain(`    url: http://127.0.0.1:${port}/agents/grok\n`);
  });

  it('free: ok; taken by another program: fails with the fix', async () => {
    const port = await freePort();
    const c = config(`127.0.0.1:${port}`);
    expect(await listenCheck(c)).toEqual({ name: 'listen', status: 'ok', detail: `127.0.0.1:${port} is free: serve can listen there` });
    taken = createServer((s) => void held.add(s));
    await new Promise<void>((resolve) => taken!.listen(port, '127.0.0.1', resolve));
    const r = await doctor(c.configPath);
    expect(r.ok).toBe(false);
    expect(r.checks.find((x) => x.name === 'listen')).toEqual({
      name: 'listen',
      status: 'fail',
      detail: `127.0.0.1:${port} is already in use by another program (no a2a-mailbridge answers /health there): serve would fail to start`,
      fix: `stop what listens there, or set server.listen in ${c.configPath} to a free port`,
    });
  });

  it("this config's running bridge: ok, saying so; another config's bridge there: fails", async () => {
    const port = await freePort();
    const c = config(`127.0.0.1:${port}`);
    app = await startApp(loadConfig(c.configPath), { log: createLogger('silent') });
    expect(await listenCheck(c)).toEqual({ name: 'listen', status: 'ok', detail: `127.0.0.1:${port} is taken by this config's bridge, which is running (its /health names this config's store)` });
    const other = config(`127.0.0.1:${port}`);
    expect(await listenCheck(other)).toMatchObject({ status: 'fail', detail: `127.0.0.1:${port} is already in use by a bridge of another config (its /health names another store, or none to this config's server.bearer): serve would fail to start` });
  });
});

describe('startApp holds the store', () => {
  it('a second startApp on the store of a running one is refused, naming this process; started once the first closes', async () => {
    const c = config('127.0.0.1:0');
    app = await startApp(loadConfig(c.configPath), { log: createLogger('silent') });
    const store = join(c.dir, 'state', 'bridge.sqlite');
    const second = config('127.0.0.1:0', store);
    const err = await startApp(loadConfig(second.configPath), { log: createLogger('silent') }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreInUseError);
    expect((err as StoreInUseError).holder).toMatchObject({ pid: process.pid, listen: `127.0.0.1:${app.server.port}`, config: c.configPath });
    await app.close();
    app = await startApp(loadConfig(second.configPath), { log: createLogger('silent') });
    expect(app.server.port).toBeGreaterThan(0);
  });
});
