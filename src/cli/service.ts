import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { ConfigError, effectiveConfig, loadConfig, type Config } from '../config/config.js';
import { iso } from '../core/time.js';
import { CliFailure, UsageError } from './errors.js';
import { installDir, packageFile } from './install-dir.js';

export type ServiceKind = 'launchd' | 'systemd';

/** The absolute paths a service file needs (launchd accepts no `~` and no `$HOME`). */
export interface ServicePaths {
  /** The Node binary (`process.execPath`). */
  node: string;
  /** The package root; the entry point is `<installDir>/dist/cli/main.js`. */
  installDir: string;
  config: string;
  /** The folder of `store.path`: the working directory, and the only folder the systemd unit may write. */
  stateDir: string;
}

export const LAUNCHD_LABEL = 'com.a2a-mailbridge';
export const SYSTEMD_UNIT = 'a2a-mailbridge.service';

const PLACEHOLDERS: Record<string, keyof ServicePaths> = { '@NODE@': 'node', '@INSTALL_DIR@': 'installDir', '@CONFIG@': 'config', '@STATE_DIR@': 'stateDir' };

/** launchd on macOS, a systemd user unit anywhere else. */
export function defaultKind(platform: NodeJS.Platform = process.platform): ServiceKind {
  return platform === 'darwin' ? 'launchd' : 'systemd';
}

function fill(template: string, p: ServicePaths, escape: (s: string) => string): string {
  for (const k of Object.keys(p) as (keyof ServicePaths)[]) if (!isAbsolute(p[k])) throw new UsageError(`service install needs absolute paths; ${k} is ${JSON.stringify(p[k])}`);
  let out = template;
  for (const [mark, key] of Object.entries(PLACEHOLDERS)) out = out.replaceAll(mark, escape(p[key]));
  const left = /@[A-Z_]+@/.exec(out);
  if (left) throw new Error(`a2a-mailbridge: service template has an unknown placeholder ${left[0]}`);
  return out;
}

function xmlEscape(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * The LaunchAgent plist: the template with every placeholder replaced by an XML-escaped absolute
 * path, and its how-to comment replaced by one saying where the file came from.
 * @throws UsageError for a relative path
 */
export function renderPlist(template: string, p: ServicePaths, at: number): string {
  const body = fill(template, p, xmlEscape);
  return body.replace(/<!--[\s\S]*?-->/, `<!-- Written by a2a-mailbridge service install at ${iso(at)} from launchd/${LAUNCHD_LABEL}.plist. -->`);
}

/**
 * Escapes a path for a unit file: `%` (specifiers) doubles. Paths with whitespace, quotes,
 * backslashes or `$` are refused rather than quoted, as some unit settings take them literally.
 * @throws UsageError naming the path
 */
function systemdPath(s: string): string {
  const unsafe = unsafeUnitPath(s);
  if (unsafe !== null) throw new UsageError(unsafe);
  return s.replaceAll('%', '%%');
}

/** Why `s` cannot go into a unit file (a space, quote, backslash or `$`), or null when it can. */
function unsafeUnitPath(s: string): string | null {
  return /[\s"'\\$]/.test(s) ? `the path ${JSON.stringify(s)} has a space, quote, backslash or $; move it (or the install) to a plain path for systemd` : null;
}

/**
 * The systemd user unit: the template with every placeholder replaced, and its leading how-to
 * comment replaced by one saying where the file came from.
 * @throws UsageError for a relative or unsafe path
 */
export function renderUnit(template: string, p: ServicePaths, at: number, o: { asGiven?: boolean } = {}): string {
  // asGiven: an unsafe path written as it is, for a dry run to show the unit it refuses.
  const body = fill(template, p, o.asGiven ? (x) => x.replaceAll('%', '%%') : systemdPath);
  const lines = body.split('\n');
  const firstSetting = lines.findIndex((l) => !l.startsWith('#'));
  return [`# Written by a2a-mailbridge service install at ${iso(at)} from launchd/${SYSTEMD_UNIT}.`, ...lines.slice(firstSetting)].join('\n');
}

/** Where the service file goes: `~/Library/LaunchAgents/…plist`, or `$XDG_CONFIG_HOME/systemd/user/…service` (`~/.config` by default). */
export function serviceTarget(kind: ServiceKind, env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  if (kind === 'launchd') return join(home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`);
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'systemd', 'user', SYSTEMD_UNIT);
}

/** The one command that loads (and starts) the installed service. */
export function loadCommand(kind: ServiceKind, file: string, uid = process.getuid?.() ?? 501): string {
  if (kind === 'launchd') return `launchctl bootstrap gui/${uid} ${file}`;
  return `systemctl --user daemon-reload && systemctl --user enable --now ${SYSTEMD_UNIT}`;
}

/** Folders a unit with `PrivateTmp=yes` sees empty (its own /tmp and /var/tmp), and with `PrivateDevices=yes` its own /dev/shm. */
const PRIVATE_FOLDERS = ['/tmp', '/var/tmp', '/dev/shm'];

/** A path the systemd unit needs, and what it is (`store.path's folder`, `the config`…). */
export interface NeededPath {
  what: string;
  path: string;
}

/**
 * The paths among `needed` that lie under /tmp, /var/tmp or /dev/shm: the hardened unit runs with
 * `PrivateTmp=yes` and `PrivateDevices=yes`, so it gets empty private copies of those folders and
 * can never see these files (systemd.exec(5)).
 */
export function privateFolderConflicts(needed: readonly NeededPath[]): NeededPath[] {
  return needed.filter((n) => PRIVATE_FOLDERS.some((d) => n.path === d || n.path.startsWith(`${d}/`)));
}

/** What the systemd unit must reach: the Node binary, the install, the config, the store's folder, the secret files and the Maildir. */
export function unitNeeds(config: Config, paths: ServicePaths, secretFiles: readonly NeededPath[]): NeededPath[] {
  return [
    { what: 'the Node binary', path: paths.node },
    { what: 'the install', path: paths.installDir },
    { what: 'the config', path: paths.config },
    { what: "store.path's folder", path: paths.stateDir },
    ...secretFiles,
    ...(config.mailbox.maildirPath !== undefined ? [{ what: 'mailbox.maildir.path', path: config.mailbox.maildirPath }] : []),
  ];
}

/** The refusal naming each path the unit could never see, and what to do. */
export function privateFolderMessage(conflicts: readonly NeededPath[]): string {
  const list = conflicts.map((c) => `${c.path} (${c.what})`).join(', ');
  return `the systemd unit runs with PrivateTmp=yes and PrivateDevices=yes, so it gets empty private /tmp, /var/tmp and /dev/shm and can never see ${list}; move ${conflicts.length === 1 ? 'it' : 'them'} out of those folders (e.g. a2a-mailbridge init --dir ~/.config/a2a-mailbridge, and a checkout under your home)`;
}

/** The secret files the config read, from its effective keys (`*_file`). */
function secretFilesOf(config: Config): NeededPath[] {
  const out: NeededPath[] = [];
  const walk = (v: unknown, key: string): void => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${key}[${i}]`));
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, key ? `${key}.${k}` : k);
    else if (typeof v === 'string' && key.endsWith('_file')) out.push({ what: key, path: v });
  };
  walk(effectiveConfig(config), '');
  return out;
}

/** The paths of this install, this Node and this config, as the service file names them. */
export function servicePaths(configFile: string, config: Config): ServicePaths {
  return { node: process.execPath, installDir: installDir(), config: resolve(configFile), stateDir: dirname(config.store.path) };
}

/**
 * The service file `service install` writes for this config now (`service status` compares the
 * installed one with it).
 * @throws UsageError for a relative or unsafe path
 */
export function renderedService(kind: ServiceKind, configFile: string, config: Config, at: number, o: { asGiven?: boolean } = {}): string {
  const paths = servicePaths(configFile, config);
  const templateName = kind === 'launchd' ? `${LAUNCHD_LABEL}.plist` : SYSTEMD_UNIT;
  const template = readFileSync(packageFile(join('launchd', templateName)), 'utf8');
  return kind === 'launchd' ? renderPlist(template, paths, at) : renderUnit(template, paths, at, o);
}

export interface ServiceInstallOptions {
  launchd?: boolean;
  systemd?: boolean;
  dryRun?: boolean;
  force?: boolean;
}

/** What `service install` would write now and where, and why it would refuse to. */
export interface ServicePlan {
  paths: ServicePaths;
  /** The service file as it would be written. */
  text: string;
  /** Where it goes ({@link serviceTarget}), and the command that loads it. */
  target: string;
  command: string;
  /**
   * Why install refuses to write it, each a sentence naming the fix: a path the systemd unit could
   * never see ({@link privateFolderConflicts}), `dist/cli/main.js` missing. Empty when it would.
   * An existing file (needs `--force`) is not among them.
   */
  refusals: string[];
}

/**
 * Every check `service install` makes before it writes, writing nothing: loads the config with its
 * secret files, renders the service file, and looks for what would make the install refuse.
 * @throws ConfigError (the config or a secret file does not load), UsageError (a relative or unsafe path)
 */
export function planService(kind: ServiceKind, configFile: string, now = Date.now()): ServicePlan {
  const config = loadConfig(configFile);
  const paths = servicePaths(configFile, config);
  // A path a unit file cannot hold is a refusal like the others: a dry run still shows the unit.
  const unsafe = kind === 'systemd' ? [paths.node, paths.installDir, paths.config, paths.stateDir].flatMap((p) => unsafeUnitPath(p) ?? []) : [];
  const text = renderedService(kind, configFile, config, now, { asGiven: unsafe.length > 0 });
  const target = serviceTarget(kind);
  const entry = join(paths.installDir, 'dist', 'cli', 'main.js');
  const hidden = kind === 'systemd' ? privateFolderConflicts(unitNeeds(config, paths, secretFilesOf(config))) : [];
  const refusals = [...unsafe, ...(hidden.length ? [privateFolderMessage(hidden)] : []), ...(existsSync(entry) ? [] : [`${entry} does not exist; build first: npm run build (in ${paths.installDir})`])];
  return { paths, text, target, command: loadCommand(kind, target), refusals };
}

/**
 * Why `service install` would refuse for this config now, in its own words ({@link planService}),
 * or null when it would write the file. For `service status`, which must not suggest an install
 * that fails.
 */
export function installRefusal(kind: ServiceKind, configFile: string): string | null {
  try {
    const { refusals } = planService(kind, configFile);
    return refusals.length ? refusals.join('; ') : null;
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) return err.message;
    throw err;
  }
}

/**
 * `a2a-mailbridge service install [--launchd|--systemd] [--dry-run] [--force]`: renders the
 * LaunchAgent plist or the systemd user unit from the templates in `launchd/`, with this Node
 * binary, this install, the config and the store's folder as absolute paths; writes it (mode 0644,
 * creating the state folder 0700) and prints the command that loads it. `--dry-run` prints the
 * file on stdout and the target and command on stderr, and writes nothing. An existing file is
 * replaced only with `--force`.
 *
 * @returns the exit code (0)
 * A systemd unit that could never see a path it needs (under /tmp, /var/tmp or /dev/shm: see
 * {@link privateFolderConflicts}) is refused, naming each path; `--dry-run` prints it with a warning.
 *
 * @throws UsageError (both kinds asked for), ConfigError (the config does not load), CliFailure
 *   (the file exists, `dist/cli/main.js` is missing: not built, a path the systemd unit cannot
 *   hold (a space, quote, backslash or $), or a needed path is in a folder the systemd unit gets a
 *   private copy of)
 */
export function runServiceInstall(configFile: string, o: ServiceInstallOptions, now = Date.now()): number {
  if (o.launchd && o.systemd) throw new UsageError('choose one of --launchd and --systemd');
  const kind: ServiceKind = o.launchd ? 'launchd' : o.systemd ? 'systemd' : defaultKind();
  const { paths, text, target, command, refusals } = planService(kind, configFile, now);

  if (o.dryRun) {
    // Exit 1 when the install itself would refuse, so a script can trust a dry run's 0.
    process.stdout.write(text);
    const notes = [`# would write ${target}`, `# then load it with: ${command}`];
    const all = existsSync(target) && !o.force ? [...refusals, `${target} exists; pass --force to replace it`] : refusals;
    for (const r of all) notes.push(`# warning: the install would refuse: ${r}`);
    process.stderr.write(`${notes.join('\n')}\n`);
    return all.length ? 1 : 0;
  }
  if (refusals.length) throw new CliFailure(`refusing to write ${target}: ${refusals.join('; ')}`);
  if (existsSync(target) && !o.force) throw new CliFailure(`refusing to overwrite ${target}; pass --force to replace it`);
  if (!existsSync(paths.stateDir)) {
    mkdirSync(paths.stateDir, { recursive: true, mode: 0o700 });
    chmodSync(paths.stateDir, 0o700);
  }
  mkdirSync(dirname(target), { recursive: true });
  // launchd refuses a plist that others may write; 0644 suits both managers.
  writeFileSync(target, text, { mode: 0o644 });
  chmodSync(target, 0o644);
  process.stdout.write(`wrote ${target}\nload it with:\n  ${command}\n`);
  return 0;
}
