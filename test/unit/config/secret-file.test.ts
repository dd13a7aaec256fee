import { chmodSync, mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { splitFix } from '../../../src/cli/doctor.js';
import { readSecretFile, SecretFileError } from '../../../src/config/secret-file.js';
import { paste, SHELLS } from '../../helpers/paste.js';

const dir = mkdtempSync(join(tmpdir(), 'mb-secret-'));

function file(name: string, content: string, mode: number): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  chmodSync(p, mode);
  return p;
}

describe('readSecretFile', () => {
  it('reads a 0600 file and trims exactly one trailing newline', () => {
    expect(readSecretFile(file('a', 'tok en\n', 0o600), 'k')).toBe('tok en');
    expect(readSecretFile(file('b', 'x\r\n', 0o600), 'k')).toBe('x');
    expect(readSecretFile(file('c', 'x\n\n', 0o600), 'k')).toBe('x\n');
    expect(readSecretFile(file('d', 'x', 0o400), 'k')).toBe('x');
  });

  it('refuses group or world bits with the chmod fix in the message', () => {
    const p = file('e', 'secret', 0o644);
    expect(() => readSecretFile(p, 'server.bearer_file')).toThrow(SecretFileError);
    expect(() => readSecretFile(p, 'server.bearer_file')).toThrow(`run: chmod 600 ${p}`);
    // Who the bits open it to, as a fresh user's trial found "readable by others" said of a 0640 file.
    expect(() => readSecretFile(file('f', 'secret', 0o640), 'k')).toThrow(/mode 0640, readable by its group;/);
    expect(() => readSecretFile(file('g', 'secret', 0o604), 'k')).toThrow(/mode 0604, readable by others;/);
    expect(() => readSecretFile(file('h', 'secret', 0o620), 'k')).toThrow(/mode 0620, writable by its group;/);
    expect(() => readSecretFile(file('i', 'secret', 0o601), 'k')).toThrow(/mode 0601, usable by others;/);
  });

  it('refuses a symlink even to a safe file, a directory, a missing file and an empty file', () => {
    const target = file('h', 'secret', 0o600);
    const link = join(dir, 'link');
    symlinkSync(target, link);
    expect(() => readSecretFile(link, 'k')).toThrow(/symbolic link/);
    const sub = join(dir, 'sub');
    mkdirSync(sub, { mode: 0o700 });
    expect(() => readSecretFile(sub, 'k')).toThrow(/not a regular file/);
    expect(() => readSecretFile(join(dir, 'missing'), 'k')).toThrow(/does not exist/);
    expect(() => readSecretFile(file('i', '\n', 0o600), 'k')).toThrow(/is empty/);
  });

  it('refuses a safe file in a folder others can write, naming the folder and the chmod; a sticky folder is fine', () => {
    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const p = join(open, 'bearer');
    writeFileSync(p, 'secret', { mode: 0o600 });
    expect(() => readSecretFile(p, 'server.bearer_file')).toThrow(
      `server.bearer_file: secret file ${p} is in ${open}, which others can write (mode 0777), so they could replace the secret; run: chmod go-w ${open}`,
    );
    chmodSync(open, 0o775);
    expect(() => readSecretFile(p, 'k')).toThrow(/mode 0775/);
    chmodSync(open, 0o1777);
    expect(readSecretFile(p, 'k')).toBe('secret');
    chmodSync(open, 0o755);
    expect(readSecretFile(p, 'k')).toBe('secret');
  });

  it('an empty secret the bridge generates names `secret new … --force` as the fix (doctor shows it); one issued elsewhere is to be written in', () => {
    const empty = file('empty', '', 0o600);
    const signing = (): string => {
      try {
        readSecretFile(empty, 'agents[0].webhook.secret_file', '/srv/c.toml');
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    };
    expect(signing()).toBe(`agents[0].webhook.secret_file: secret file ${empty} is empty; run: a2a-mailbridge --config /srv/c.toml secret new 'agents[0].webhook.secret_file' --force`);
    expect(splitFix(signing()).fix).toBe("a2a-mailbridge --config /srv/c.toml secret new 'agents[0].webhook.secret_file' --force");
    expect(() => readSecretFile(empty, 'server.bearer_file', '/srv/c.toml')).toThrow(`server.bearer_file: secret file ${empty} is empty; run: a2a-mailbridge --config /srv/c.toml secret new bearer --force`);
    expect(() => readSecretFile(empty, 'mailbox.imap.password_file', '/srv/c.toml')).toThrow(`mailbox.imap.password_file: secret file ${empty} is empty; write the secret into it`);
  });

  it('names the config key in every error', () => {
    expect(() => readSecretFile(join(dir, 'nope'), 'agents[0].webhook.secret_file')).toThrow(/^agents\[0\]\.webhook\.secret_file: /);
  });

  // Tester's report: a fix printed with a path holding `$(…)` ran it when pasted.
  it.each(SHELLS)('prints chmod fixes that, pasted into %s, fix the file and folder named and run nothing their names hold', (shell) => {
    const odd = mkdtempSync(join(dir, "odd $(touch PWNED) `touch PWNED` it's [0] "));
    const p = join(odd, 'b $(touch PWNED)');
    writeFileSync(p, 'secret');
    chmodSync(p, 0o644);
    const fixOf = (): string => {
      try {
        readSecretFile(p, 'k');
      } catch (err) {
        return splitFix((err as Error).message).fix!;
      }
      return '';
    };
    paste(shell, fixOf(), dir);
    expect(statSync(p).mode & 0o777).toBe(0o600);
    chmodSync(odd, 0o777);
    paste(shell, fixOf(), dir);
    expect(statSync(odd).mode & 0o777).toBe(0o755);
    expect(readSecretFile(p, 'k')).toBe('secret');
    expect(readdirSync(dir).filter((n) => n.includes('PWNED') && !n.startsWith('odd'))).toEqual([]);
    expect(readdirSync(odd)).toEqual(['b $(touch PWNED)']);
  });
});
