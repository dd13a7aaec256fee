import { chmodSync, chownSync, copyFileSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { splitFix } from '../../../src/cli/doctor.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { NOBODY, tempFolders } from '../../helpers/temp-folders.js';
import { names, paste, SHELLS } from '../../helpers/paste.js';

/**
 * Whoever can change the config file, or swap it or a folder above it, can point the bridge at
 * their own webhook, mailbox or DNS servers: the config must be this user's (or root's) and
 * reached through folders no one else can write (OpenSSH's StrictModes), through a symlink too.
 */
const { folder, removeAfter } = tempFolders('mb-guard-');
/** Copies the config and its secrets from `from` into `to` (mode 0600, as made). */
function copyConfig(from: string, to: string): string {
  for (const f of ['mailbridge.toml', 'bearer', 'webhook-secret', 'webhook-bearer', 'imap-password']) copyFileSync(join(from, f), join(to, f));
  return join(to, 'mailbridge.toml');
}
const uid = process.getuid?.() ?? 0;

describe('the config file guard', () => {
  it.runIf(uid === 0)('refuses a config owned by another user (not root), even one only its owner can write, naming the path and the chown', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    chmodSync(c.configPath, 0o644);
    chownSync(c.configPath, NOBODY, NOBODY);
    expect(() => loadConfig(c.configPath)).toThrow(`config file: ${c.configPath} is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could redirect the bridge; run: chown ${uid} ${c.configPath}`);
    chownSync(c.configPath, uid, uid);
    expect(loadConfig(c.configPath).agents).toHaveLength(1);
  });

  it.runIf(uid === 0)('refuses a config in a folder owned by another user, or below one', () => {
    const top = folder(0o755);
    mkdirSync(join(top, 'cfg'), { mode: 0o700 });
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const file = copyConfig(c.dir, join(top, 'cfg'));
    chownSync(top, NOBODY, NOBODY);
    expect(() => loadConfig(file)).toThrow(`config file: ${top} is owned by uid ${NOBODY}, neither this user (uid ${uid}) nor root, so its owner could redirect the bridge; run: chown ${uid} ${top}`);
  });

  it('refuses a symlink to a config in a folder others can write, naming that folder, the link and its target', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const shared = folder(0o777);
    const target = copyConfig(c.dir, shared);
    chmodSync(target, 0o644);
    const link = join(c.dir, 'link.toml');
    symlinkSync(target, link);
    expect(() => loadConfig(link)).toThrow(`config file: ${shared} is writable by others (mode 0777), so they could redirect the bridge (the config ${link} is a link to ${target}); run: chmod go-w ${shared}`);
    chmodSync(shared, 0o755);
    expect(loadConfig(link).agents).toHaveLength(1);
  });

  it('refuses a config in a private folder inside a folder others can write; a sticky one (like /tmp) is fine', () => {
    const top = folder(0o777);
    mkdirSync(join(top, 'cfg'), { mode: 0o700 });
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const file = copyConfig(c.dir, join(top, 'cfg'));
    expect(() => loadConfig(file)).toThrow(`config file: ${top} is writable by others (mode 0777), so they could redirect the bridge; run: chmod go-w ${top}`);
    // Others may add files to a sticky folder but not rename or replace ours (sshd's StrictModes agrees).
    chmodSync(top, 0o1777);
    expect(loadConfig(file).agents).toHaveLength(1);
  });

  // Tester's report: `run: chmod go-w /work/trial2/odd $(touch PWNED) dir`, pasted, created PWNED.
  it.each(SHELLS)('prints a chmod that, pasted into %s, fixes the folder named in it and runs nothing its name holds', (shell) => {
    const top = folder(0o755);
    const odd = join(top, "odd $(touch PWNED) `touch PWNED` it's [0] dir");
    mkdirSync(join(odd, 'cfg'), { recursive: true, mode: 0o700 });
    chmodSync(odd, 0o777);
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const file = copyConfig(c.dir, join(odd, 'cfg'));
    let message = '';
    try {
      loadConfig(file);
    } catch (err) {
      message = (err as Error).message;
    }
    const fix = splitFix(message).fix!;
    expect(fix).toBe(`chmod go-w '${odd.replaceAll("'", `'\\''`)}'`);
    const before = names(top);
    paste(shell, fix, top);
    expect(names(top)).toEqual(before);
    expect(statSync(odd).mode & 0o777).toBe(0o755);
    expect(loadConfig(file).agents).toHaveLength(1);
  });
});
