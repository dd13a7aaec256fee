import { createServer } from 'node:net';
import { mkdirSync, realpathSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimAway, listeningSocket, procAddress, socketHolder } from '../../../src/cli/listen-owner.js';
import { claimStore } from '../../../src/store/store.js';
import { tempFolders } from '../../helpers/temp-folders.js';

/**
 * Who listens at server.listen (src/cli/listen-owner.ts): how `status` and `stop` follow this
 * config's serve to its claim when its store folder was moved away while it runs, and refuse any
 * other listener (it is never sent the bearer).
 */
const { folder } = tempFolders('mb-listen-owner-');
const linux = process.platform === 'linux';

/** A TCP server of this process on a free loopback port, closed by the returned function. */
async function listening(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, close: () => new Promise((r) => server.close(() => r())) };
}

describe('listen-owner', () => {
  it('writes addresses as the kernel table does', () => {
    expect(procAddress('127.0.0.1')).toBe('0100007F');
    expect(procAddress('127.0.0.2')).toBe('0200007F');
    expect(procAddress('::1')).toBe('00000000000000000000000001000000');
    expect(procAddress('[::1]')).toBe('00000000000000000000000001000000');
    expect(procAddress('localhost')).toBeNull();
  });

  it.runIf(linux)('finds this process listening at a loopback port, by its socket', async () => {
    const l = await listening();
    try {
      const s = listeningSocket('127.0.0.1', l.port);
      expect(s).toMatchObject({ uid: process.getuid!() });
      expect(socketHolder(s!.inode)).toBe(process.pid);
      expect(listeningSocket('127.0.0.2', l.port)).toBeNull();
    } finally {
      await l.close();
    }
  });

  it.runIf(linux)("follows the listener to its claim where the store folder was moved; only when the claim's note names this config and address", async () => {
    const dir = folder(0o700);
    const l = await listening();
    const listen = `127.0.0.1:${l.port}`;
    const configFile = join(dir, 'config.toml');
    mkdirSync(join(dir, 'state'), { mode: 0o700 });
    const claim = claimStore(join(dir, 'state', 'bridge.sqlite'), { listen, config: configFile });
    try {
      // In place, nothing is followed here: the claim at store.path says it all (health-probe.ts).
      renameSync(join(dir, 'state'), join(dir, 'state.moved'));
      const away = claimAway(configFile, listen, '127.0.0.1', l.port);
      expect(away).toMatchObject({ pid: process.pid, store: join(realpathSync(dir), 'state.moved', 'bridge.sqlite'), holder: { pid: process.pid, listen, config: configFile } });
      // Another config file, or another address noted: not this config's serve.
      expect(claimAway(join(dir, 'other.toml'), listen, '127.0.0.1', l.port)).toBeNull();
      expect(claimAway(configFile, '127.0.0.1:1', '127.0.0.1', l.port)).toBeNull();
    } finally {
      claim.release();
      await l.close();
    }
    // The claim released: nothing to follow.
    const l2 = await listening();
    try {
      expect(claimAway(configFile, `127.0.0.1:${l2.port}`, '127.0.0.1', l2.port)).toBeNull();
    } finally {
      await l2.close();
    }
  });
});
