import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, existsSync, fchmodSync, lstatSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { iso } from '../core/time.js';
import { commandLine, configPath, shellLine, shellWord } from '../config/config-path.js';
import { CliFailure, UsageError } from './errors.js';
import { maildirConfig } from './init-maildir.js';
import { packageFile } from './install-dir.js';

/**
 * The start of the placeholder `init` writes into the secret files a person must fill in. The
 * loader refuses any secret holding `replace-with-` (any case), so a forgotten one stops `serve`
 * and `doctor` names it.
 */
export const PLACEHOLDER_PREFIX = 'REPLACE-WITH-';

/** The facade's bearer: 32 random bytes from the CSPRNG, as 64 lowercase hex characters. */
export function generateBearer(): string {
  return randomBytes(32).toString('hex');
}

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** One file `init` writes: where (relative to the folder), what goes in, and the line printed about it. */
export interface InitFile {
  path: string;
  content: string;
  note: string;
}

/**
 * The header put above the example config: when it was written and what to do next.
 * @param configFile where the config goes: the `doctor` it names carries its `--config` unless
 *   every command finds it by itself (src/config/config-path.ts)
 * @param maildir the Maildir the config reads (`init --maildir`), or undefined for IMAP
 */
export function configHeader(at: number, configFile = '', maildir?: string): string {
  const mailbox =
    maildir === undefined
      ? [
          '#   1. [mailbox]: your address, folder and IMAP server (or a Maildir); write your IMAP app',
          '#      password into secrets/imap-password (it holds a placeholder).',
        ]
      : [
          '#   1. [mailbox]: your address and provider; it reads the Maildir in [mailbox.maildir] (no IMAP',
          '#      password needed): keep your mail sync filling it.',
        ];
  return [
    `# Written by \`a2a-mailbridge init${maildir === undefined ? '' : ' --maildir'}\` at ${iso(at)}, from mailbridge.example.toml. Next:`,
    ...mailbox,
    '#   2. [[agents]]: the agent\'s From address, DKIM domain and webhook URL. Give the agent the',
    '#      signing secret in secrets/webhook-secret (or, for auth = "bearer", uncomment bearer_file',
    '#      and write its trigger token into secrets/webhook-bearer with mode 0600).',
    `#   3. Run \`${commandLine(configFile, 'doctor')}\`: it checks all of this and prints the Hermes snippet.`,
    '',
    '',
  ].join('\n');
}

/**
 * What `init` writes into the folder: the config (the example with a header) and the secret files
 * that config reads — the facade's bearer and the signing secret generated here, and for IMAP the
 * password as a placeholder. With `maildir` the config reads that Maildir (src/cli/init-maildir.ts)
 * and names no IMAP password, so none is written. No file for a key the config leaves commented
 * out (a webhook's `bearer_file`): doctor would report it unused, and the loader says how to create
 * it once named.
 * @param maildir an absolute path, or undefined for the example's IMAP mailbox
 * @throws ExampleShapeError (src/cli/init-maildir.ts) when the example cannot be rewritten for a Maildir
 */
export function initFiles(exampleConfig: string, at: number, configFile = '', maildir?: string): InitFile[] {
  const config = maildir === undefined ? exampleConfig : maildirConfig(exampleConfig, maildir);
  const files: InitFile[] = [
    { path: 'config.toml', content: configHeader(at, configFile, maildir) + config, note: 'the config: edit [mailbox] and [[agents]]' },
    { path: 'secrets/bearer', content: `${generateBearer()}\n`, note: "the facade's bearer (generated); local callers such as Hermes send it" },
    {
      path: 'secrets/webhook-secret',
      content: `${generateSigningSecret()}\n`,
      note: "the Standard Webhooks signing secret (generated); configure the same secret at the agent's webhook",
    },
  ];
  if (maildir === undefined) {
    files.push({
      path: 'secrets/imap-password',
      content: `${PLACEHOLDER_PREFIX}YOUR-IMAP-APP-PASSWORD\n`,
      note: 'placeholder: replace its content with your IMAP app password (the file stays mode 0600)',
    });
  }
  return files;
}

/** Creates `dir` with mode 0700 when missing; returns a warning line when it exists and others may enter it. */
function privateDir(dir: string): string | null {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    return null;
  }
  const st = statSync(dir);
  if (!st.isDirectory()) throw new CliFailure(`${dir} exists and is not a folder; choose another --dir`);
  const mode = st.mode & 0o777;
  return mode & 0o077 ? `note: ${dir} has mode ${mode.toString(8).padStart(4, '0')}; consider: ${shellLine('chmod', '700', dir)}` : null;
}

/** Writes a new file with mode 0600; fails if anything (a file, a symlink) is at `path`. */
function writeNew(path: string, content: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
}

/** Whether `dir` holds the `cur/` and `new/` folders of a Maildir (what doctor's mailbox check asks). */
function isMaildir(dir: string): boolean {
  return ['cur', 'new'].every((sub) => {
    try {
      return statSync(join(dir, sub)).isDirectory();
    } catch {
      return false;
    }
  });
}

/**
 * `a2a-mailbridge init [--dir <d>] [--maildir <path>]`: writes a commented config and the secret files (mode 0600) in
 * a private folder (0700), with `secrets/`, `state/` and `logs/` (0700) inside. The folder is `--dir`, else
 * the folder of the config path (`--config`, `$A2A_MAILBRIDGE_CONFIG`, or
 * `~/.config/a2a-mailbridge`); the config is `<dir>/config.toml`, or the `--config` path itself.
 * With `maildir` the config reads that Maildir instead of IMAP (its path made absolute against the
 * working folder; no IMAP password file); a path without `cur/` and `new/` yet gets a note with the
 * `mkdir` that makes them. Nothing is written when any of the files exists.
 * A `--config` beside `--dir` must name the file `--dir` writes (`<dir>/config.toml`): each says
 * where the config goes, so two different places are refused rather than one silently dropped.
 *
 * @returns the exit code (0)
 * @throws CliFailure naming the first file that exists
 * @throws UsageError for a Maildir path starting with `~` (the config does not expand it), or for
 *   `--config` and `--dir` naming different places
 */
export function runInit(o: { dir?: string; configFlag?: string; maildir?: string }, now = Date.now()): number {
  if (o.maildir !== undefined && (o.maildir === '' || o.maildir.startsWith('~'))) {
    throw new UsageError(`--maildir ${JSON.stringify(o.maildir)}: give the Maildir's full path, e.g. --maildir "$HOME/Mail/agent-replies" ("~" is not expanded in the config)`);
  }
  const maildir = o.maildir === undefined ? undefined : resolve(o.maildir);
  const configFile = o.dir !== undefined ? join(resolve(o.dir), 'config.toml') : resolve(configPath(o.configFlag));
  if (o.dir !== undefined && o.configFlag !== undefined && resolve(o.configFlag) !== configFile) {
    const rest = o.maildir !== undefined ? ['--maildir', o.maildir] : [];
    throw new UsageError(
      `--config ${shellWord(o.configFlag)} and --dir ${shellWord(o.dir)} name different places (--dir writes ${shellWord(configFile)}); give one: ` +
        `${shellLine('a2a-mailbridge', '--config', o.configFlag, 'init', ...rest)} writes that file and its secrets/, state/ and logs/ beside it, ` +
        `${shellLine('a2a-mailbridge', 'init', '--dir', o.dir, ...rest)} writes config.toml in that folder`,
    );
  }
  const dir = dirname(configFile);
  const example = readFileSync(packageFile('mailbridge.example.toml'), 'utf8');
  const files = initFiles(example, now, configFile, maildir).map((f) => ({ ...f, abs: f.path === 'config.toml' ? configFile : join(dir, f.path) }));
  for (const f of files) {
    let exists = true;
    try {
      lstatSync(f.abs);
    } catch {
      exists = false;
    }
    if (exists) throw new CliFailure(`refusing to overwrite ${f.abs}; move it away, or run init with another --dir`);
  }
  const warnings = [dir, join(dir, 'secrets'), join(dir, 'state'), join(dir, 'logs')].map(privateDir).filter((w): w is string => w !== null);
  for (const f of files) writeNew(f.abs, f.content);
  const width = Math.max(...files.map((f) => shellWord(f.abs).length));
  const lines = files.map((f) => `wrote ${shellWord(f.abs).padEnd(width)}  ${f.note}`);
  if (maildir !== undefined && !isMaildir(maildir)) {
    lines.push(`note: ${shellWord(maildir)} is not a Maildir yet (no cur/ and new/): point your mail sync at it, or make one: ${shellLine('mkdir', '-p', join(maildir, 'cur'), join(maildir, 'new'), join(maildir, 'tmp'))}`);
  }
  const edit = maildir === undefined ? 'fill in the placeholders' : 'set your address in [mailbox] and the agent in [[agents]]';
  lines.push(...warnings, `next: edit ${shellWord(configFile)}, ${edit}, then run: ${commandLine(configFile, 'doctor')}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}
