import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { makeConfigDir, minimalToml, type ConfigDir } from '../../helpers/config-dir.js';
import { freePort } from '../../helpers/free-port.js';
import { killAll, logged, spawnCli } from '../faults/bridge-process.js';

/**
 * `serve` stopped by a signal early in its start: as soon as it answers /health, and while its
 * first mailbox check still hangs (before the start-up summary). The README promises that SIGTERM
 * (and Ctrl-C) "closes the store and exits 0" for a started serve: the handlers are in place from
 * before the store is opened, not only once the summary is written.
 */
const dirs: ConfigDir[] = [];
const servers: Server[] = [];
const sockets = new Set<Socket>();
afterEach(killAll);
afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const s of servers) await new Promise((r) => s.close(r));
  for (const c of dirs) rmSync(c.dir, { recursive: true, force: true });
});

/** A TCP server that accepts connections and never sends the IMAP greeting (a check waits for timeout_s, 20 s), and a config reading it. */
async function muteImap(listen?: string): Promise<{ c: ConfigDir; connected: Promise<void> }> {
  let accepted!: () => void;
  const connected = new Promise<void>((r) => (accepted = r));
  const mute = createServer((s) => {
    sockets.add(s);
    accepted();
  });
  servers.push(mute);
  await new Promise<void>((r) => mute.listen(0, '127.0.0.1', r));
  const imapPort = (mute.address() as { port: number }).port;
  const c = makeConfigDir(
    minimalToml(listen ? { listen } : {}).replace(
      /\[mailbox\][\s\S]*?path = "Maildir"\n/,
      () => `[mailbox]\nkind = "imap"\naddress = "me@bridge.test"\n[mailbox.imap]\nhost = "127.0.0.1"\nport = ${imapPort}\ntls = false\nuser = "me"\npassword_file = "imap-password"\n`,
    ),
  );
  dirs.push(c);
  return { c, connected };
}

describe('serve stopped by a signal during its start', () => {
  it('SIGTERM the moment /health first answers 200 (the first check still awaited): logs "stopping" and "stopped", exits 0', async () => {
    const listen = `127.0.0.1:${await freePort()}`;
    const { c } = await muteImap(listen);
    const bridge = spawnCli(['--config', c.configPath, 'serve']);
    await bridge.log('a2a-mailbridge listening');
    expect((await fetch(`http://${listen}/health`)).status).toBe(200);
    bridge.child.kill('SIGTERM');
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(logged(bridge, 'stopping')).toMatchObject([{ signal: 'SIGTERM' }]);
    expect(logged(bridge, 'stopped')).toHaveLength(1);
  });

  it('SIGINT, then SIGTERM, while the first mailbox check hangs: one stop, exits 0, no summary', async () => {
    const { c, connected } = await muteImap();
    const bridge = spawnCli(['--config', c.configPath, 'serve']);
    await bridge.log('a2a-mailbridge listening');
    await connected;
    bridge.child.kill('SIGINT');
    await bridge.log('stopping');
    bridge.child.kill('SIGTERM');
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(logged(bridge, 'stopping')).toMatchObject([{ signal: 'SIGINT' }]);
    expect(logged(bridge, 'stopped')).toHaveLength(1);
    // Stopped before the first check ended: no start-up summary was written.
    expect(bridge.lines.some((l) => l.startsWith('  mailbox '))).toBe(false);
  });

  // Ctrl-C in the first ~0.3 s killed serve by the signal, with no log line (fresh-user trial): the
  // handlers came only once its log was made. Held at a step of the start (the product's seam), a
  // real signal now ends it cleanly, having opened nothing more.
  it('SIGINT once the config is read, before anything is made: logs "stopping" and "stopped", exits 0, makes no state folder', async () => {
    const c = makeConfigDir(minimalToml({ listen: `127.0.0.1:${await freePort()}` }));
    dirs.push(c);
    const bridge = spawnCli(['--config', c.configPath, 'serve'], undefined, 'config-read');
    await bridge.line((l) => l === 'a2a-mailbridge start paused at config-read');
    bridge.child.kill('SIGINT');
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(logged(bridge, 'stopping')).toMatchObject([{ signal: 'SIGINT' }]);
    expect(logged(bridge, 'stopped')).toMatchObject([{ signal: 'SIGINT', store: 'not opened' }]);
    expect(existsSync(join(c.dir, 'state'))).toBe(false);
  });

  it('SIGTERM with the claim taken, before the log and the store are opened: the claim released, no store file, exits 0', async () => {
    const c = makeConfigDir(minimalToml({ listen: `127.0.0.1:${await freePort()}` }));
    dirs.push(c);
    const bridge = spawnCli(['--config', c.configPath, 'serve'], undefined, 'claimed');
    await bridge.line((l) => l === 'a2a-mailbridge start paused at claimed');
    expect(readdirSync(join(c.dir, 'state')).sort()).toEqual(['bridge.sqlite-serve.json', 'bridge.sqlite-serve.lock']);
    bridge.child.kill('SIGTERM');
    expect(await bridge.exited).toEqual({ code: 0, signal: null });
    expect(logged(bridge, 'stopping')).toMatchObject([{ signal: 'SIGTERM' }]);
    expect(logged(bridge, 'stopped')).toMatchObject([{ signal: 'SIGTERM', store: 'not opened' }]);
    // The note is gone with the claim; the empty lock file stays, as after any stop.
    expect(readdirSync(join(c.dir, 'state'))).toEqual(['bridge.sqlite-serve.lock']);
  });
});
