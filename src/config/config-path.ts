/**
 * Where the `a2a-mailbridge` command finds its config, and how a message names a command for that
 * config: every command a message suggests (`create it with: …`, `see: …`) repeats the
 * `--config <file>` the user gave, unless the command would find that file by itself, so a
 * suggestion run as printed acts on the same config (README, "Install and configure").
 */
import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * The config file: `--config`, else `$A2A_MAILBRIDGE_CONFIG`, else
 * `$XDG_CONFIG_HOME/a2a-mailbridge/config.toml` (`~/.config/…` when XDG_CONFIG_HOME is unset).
 */
export function configPath(flag: string | undefined): string {
  if (flag) return flag;
  if (process.env.A2A_MAILBRIDGE_CONFIG) return process.env.A2A_MAILBRIDGE_CONFIG;
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'a2a-mailbridge', 'config.toml');
}

/**
 * `word` as sh, bash and zsh read it back, for a command a message prints to be pasted: as it is
 * when it holds only characters none of them treats specially (not `$`, backquotes, quotes,
 * spaces, `[ ] * ?` globs, `~`, `!`, `;`, `&`, `|`, `<`, `>`, parentheses or braces) and does not
 * start with `=` (zsh's EQUALS expansion), else single-quoted (a `'` inside as `'\''`), in which
 * none of the three expands anything (POSIX XCU 2.2.2; zshmisc "QUOTING"). '' is `''`.
 */
export function shellWord(word: string): string {
  return /^[\w@%+:,./-][\w@%+=:,./-]*$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** `words`, each a {@link shellWord}, joined by spaces: a command line safe to paste (`chmod go-w '/a b'`). */
export function shellLine(...words: string[]): string {
  return words.map(shellWord).join(' ');
}

/**
 * ` --config <file>` (absolute, shell-quoted when it must be), or '' when `configFile` is the one
 * the command finds without it ({@link configPath}: `$A2A_MAILBRIDGE_CONFIG` or the XDG default)
 * or is not known ('').
 */
export function configFlag(configFile: string): string {
  if (configFile === '') return '';
  const file = resolve(configFile);
  return file === resolve(configPath(undefined)) ? '' : ` --config ${shellWord(file)}`;
}

/**
 * The command line a message suggests for this config: `a2a-mailbridge [--config <file>] <args>`.
 * @param configFile the config in use ('' when none is: then no `--config`)
 * @param args what follows, as the user would type it (`ledger --task 3f2a9c1b`)
 */
export function commandLine(configFile: string, args: string): string {
  return `a2a-mailbridge${configFlag(configFile)} ${args}`;
}

/** True when `init` could create `file`'s folder or write into it: its nearest existing ancestor is a folder this user may write. */
function initCanWrite(file: string): boolean {
  for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
    try {
      if (!statSync(dir).isDirectory()) return false;
      accessSync(dir, constants.W_OK | constants.X_OK);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dir === dirname(dir)) return false;
    }
  }
}

/**
 * The fix for a config file that does not exist: the `init` that writes exactly that file (its
 * secrets, `state/` and `logs/` beside it: src/cli/init.ts runInit) when its folder can be
 * written, else an `init --dir` of the user's choosing; either way, or the `--config` of the file
 * the user has.
 */
export function missingConfigFix(configFile: string): string {
  const other = configFlag(configFile) === '' ? 'pass --config <file>' : 'point --config at the config file you have';
  if (initCanWrite(configFile)) return `create it with: ${commandLine(configFile, 'init')}, or ${other}`;
  return `${dirname(resolve(configFile))} cannot be written: create a config with: a2a-mailbridge init --dir <a folder of yours>, then pass --config <that folder>/config.toml; or ${other}`;
}
