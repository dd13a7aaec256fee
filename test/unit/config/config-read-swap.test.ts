import { copyFileSync, lchownSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { NOBODY, tempFolders } from '../../helpers/temp-folders.js';

/**
 * The config file read is the one whose place was checked (config-file.ts, readCheckedConfig): a
 * link flipped between the check and the read, or a file put in the checked one's stead, is never
 * read; a symlink another user owns is refused (its owner could flip it at any time).
 */
const { folder, removeAfter } = tempFolders('mb-swap-');
const uid = process.getuid?.() ?? 0;

describe('the config read after its check', () => {
  it('reads the file that was checked when the link is flipped between the check and the read', () => {
    const c = makeConfigDir(minimalToml({ listen: '127.0.0.1:7001' }));
    removeAfter(c.dir);
    // The attacker's config, with its own listen port, in a folder anyone can write.
    const shared = folder(0o777);
    const evil = join(shared, 'evil.toml');
    writeFileSync(evil, readFileSync(c.configPath, 'utf8').replace('127.0.0.1:7001', '127.0.0.1:7666').replaceAll('"bearer"', `"${join(c.dir, 'bearer')}"`), { mode: 0o666 });
    const link = join(c.dir, 'link.toml');
    symlinkSync(c.configPath, link);
    const flip = (): void => {
      unlinkSync(link);
      symlinkSync(evil, link);
    };
    const config = loadConfig(link, { skipSecrets: true, readHooks: { beforeOpen: flip } });
    expect(config.server.port).toBe(7001);
  });

  it('refuses the read when another file stands where the checked one stood', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const other = join(c.dir, 'other.toml');
    copyFileSync(c.configPath, other);
    const swap = (): void => renameSync(other, c.configPath);
    expect(() => loadConfig(c.configPath, { skipSecrets: true, readHooks: { beforeOpen: swap } })).toThrow(
      `config file: ${c.configPath} changed while it was read (another file stands there now than the one checked); run the command again, and check who else can change ${c.dir}`,
    );
  });

  it.runIf(uid === 0)('refuses a symlink another user owns, even in a sticky folder, naming the link and the fix', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const sticky = folder(0o1777);
    const link = join(sticky, 'link.toml');
    symlinkSync(c.configPath, link);
    lchownSync(link, NOBODY, NOBODY);
    expect(() => loadConfig(link, { skipSecrets: true })).toThrow(
      `config file: the symlink ${link} is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could point it at another config (the config ${link} is a link to ${c.configPath}); run: rm ${link}, and point --config at the config file itself`,
    );
    lchownSync(link, uid, uid);
    expect(loadConfig(link, { skipSecrets: true }).agents).toHaveLength(1);
  });
});
