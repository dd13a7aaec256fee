/**
 * `service uninstall` and `service status`: the other two thirds of `service install`. They run
 * the service manager (`systemctl --user`, `launchctl`) only when it is on PATH, report what it
 * said, and never touch the config, the store or the logs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { CliFailure, UsageError } from './errors.js';
import { printJson } from './format.js';
import { clean } from './format.js';
import { probeHealth } from './health-probe.js';
import { defaultKind, installRefusal, LAUNCHD_LABEL, renderedService, serviceTarget, SYSTEMD_UNIT, type ServiceKind } from './service.js';

export interface ServiceKindOptions {
  launchd?: boolean;
  systemd?: boolean;
}

function kindOf(o: ServiceKindOptions): ServiceKind {
  if (o.launchd && o.systemd) throw new UsageError('choose one of --launchd and --systemd');
  return o.launchd ? 'launchd' : o.systemd ? 'systemd' : defaultKind();
}

/** What one run of the manager gave: its exit code and first line of output, or that it is not installed. */
interface ManagerRun {
  command: string;
  ran: boolean;
  status: number | null;
  output: string;
}

/** Runs the manager when it is on PATH; never throws. */
function manager(argv: readonly string[]): ManagerRun {
  const command = argv.join(' ');
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 15_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return { command, ran: false, status: null, output: `${argv[0]} is not on PATH` };
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] ?? '';
  return { command, ran: true, status: r.status, output };
}

const uid = (): number => process.getuid?.() ?? 501;

/**
 * The process id the service manager runs the service as, or null when it runs none (not
 * installed, not running, or the manager is not on PATH): `systemctl --user show -p MainPID
 * --value` (0 when stopped), or the `pid = N` line of `launchctl print`. Never throws.
 */
export function serviceMainPid(kind: ServiceKind): number | null {
  const argv = kind === 'systemd' ? ['systemctl', '--user', 'show', '-p', 'MainPID', '--value', SYSTEMD_UNIT] : ['launchctl', 'print', `gui/${uid()}/${LAUNCHD_LABEL}`];
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 15_000 });
  if (r.error || r.status !== 0) return null;
  const m = kind === 'systemd' ? /^\s*(\d+)\s*$/.exec(r.stdout) : /^\s*pid = (\d+)\s*$/m.exec(r.stdout);
  const pid = m ? Number(m[1]) : 0;
  return pid > 0 ? pid : null;
}

/** The commands that stop and unload the service, in order. */
export function stopCommands(kind: ServiceKind): string[][] {
  if (kind === 'launchd') return [['launchctl', 'bootout', `gui/${uid()}/${LAUNCHD_LABEL}`]];
  return [['systemctl', '--user', 'disable', '--now', SYSTEMD_UNIT]];
}

/**
 * `a2a-mailbridge service uninstall [--launchd|--systemd] [--dry-run]`: stops and unloads the
 * service (`systemctl --user disable --now`, or `launchctl bootout`) when that manager is on PATH,
 * removes the file `service install` wrote, and for systemd runs `daemon-reload`. A manager that
 * fails (not running, no user session) is reported with the command to run by hand; the file is
 * removed all the same. The config, the store and the logs are kept.
 *
 * @returns the exit code: 0 (also when nothing was installed)
 * @throws UsageError when both kinds are asked for
 */
export function runServiceUninstall(o: ServiceKindOptions & { dryRun?: boolean }): number {
  const kind = kindOf(o);
  const target = serviceTarget(kind);
  let present = true;
  try {
    lstatSync(target);
  } catch {
    present = false;
  }
  if (!present) {
    process.stdout.write(`no ${kind} service file at ${target}; nothing to uninstall\n`);
    return 0;
  }
  const steps = stopCommands(kind);
  if (o.dryRun) {
    const lines = [...steps.map((s) => `would run: ${s.join(' ')}`), `would remove: ${target}`];
    if (kind === 'systemd') lines.push('would run: systemctl --user daemon-reload');
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  }
  const out: string[] = [];
  for (const step of steps) {
    const r = manager(step);
    if (!r.ran) out.push(`${r.output}: not stopped here; if it runs, stop it with: ${r.command}`);
    else if (r.status === 0) out.push(`ran: ${r.command}`);
    else out.push(`${r.command} failed (${r.output || `exit ${r.status}`}); if it still runs, stop it by hand`);
  }
  rmSync(target, { force: true });
  out.push(`removed ${target}`);
  if (kind === 'systemd') {
    const r = manager(['systemctl', '--user', 'daemon-reload']);
    out.push(r.ran && r.status === 0 ? `ran: ${r.command}` : `${r.command}: ${r.output || `exit ${r.status}`}`);
  }
  out.push('the config, the store and the logs are kept');
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}

/** What `service status --json` prints. */
export interface ServiceStatus {
  kind: ServiceKind;
  file: string;
  installed: boolean;
  /** The file is what `service install` would write now (paths of Node, the install, the config). Null when not installed. */
  upToDate: boolean | null;
  /** systemd: the unit is enabled (its default.target.wants link exists). Null for launchd. */
  enabled: boolean | null;
  /** The manager's own word (`active`, `inactive`, `loaded`…), or why it could not be asked. */
  manager: string;
  /** Why `service install` (or `--force`) would refuse for this config now, in its words; null when it would write the file. */
  installRefusal: string | null;
  /** This config's bridge answered GET /health on server.listen (a bridge serving another store there does not count). */
  answering: boolean;
  /**
   * Whether the bridge answering is the service's own process (its /health pid is the manager's
   * main pid): false for one started by hand; null when not answering or the manager cannot be asked.
   */
  serviceProcess: boolean | null;
  health: string;
}

/** The file without its first line (`Written by … at <time>`), for comparing two renderings. */
function body(text: string, kind: ServiceKind): string {
  return kind === 'launchd' ? text.replace(/<!-- Written by [^>]*-->/, '') : text.split('\n').slice(1).join('\n');
}

/**
 * `a2a-mailbridge service status [--launchd|--systemd] [--json]`: whether the service file is
 * installed and still what `service install` would write (a moved checkout or a new Node makes it
 * stale), whether systemd has it enabled, what the manager says (when it is on PATH), and whether
 * the bridge answers `GET /health` on `server.listen`. Where it would suggest `service install`, it
 * says instead what would make that install refuse (install's own checks, {@link installRefusal}).
 *
 * @returns 0 when the service is installed and the bridge answers (and, when the manager can be
 *   asked, it is the service's own process), else 1
 * @throws UsageError, ConfigError (the config does not load)
 */
export async function runServiceStatus(configFile: string, o: ServiceKindOptions & { json?: boolean }): Promise<number> {
  const kind = kindOf(o);
  const config = loadConfig(configFile, { skipSecrets: true });
  const file = serviceTarget(kind);
  const installed = existsSync(file);
  let upToDate: boolean | null = null;
  if (installed) {
    try {
      upToDate = body(readFileSync(file, 'utf8'), kind) === body(renderedService(kind, configFile, config, Date.now()), kind);
    } catch (err) {
      if (!(err instanceof UsageError || err instanceof CliFailure)) throw err;
      upToDate = false;
    }
  }
  const refusal = installRefusal(kind, configFile);
  const enabled = kind === 'systemd' ? existsSync(join(dirname(file), 'default.target.wants', SYSTEMD_UNIT)) : null;
  const m = kind === 'systemd' ? manager(['systemctl', '--user', 'is-active', SYSTEMD_UNIT]) : manager(['launchctl', 'print', `gui/${uid()}/${LAUNCHD_LABEL}`]);
  const managerWord = !m.ran ? m.output : kind === 'systemd' ? m.output || `exit ${m.status}` : m.status === 0 ? 'loaded' : `not loaded (${m.output || `exit ${m.status}`})`;
  const probe = await probeHealth(config);
  // This config's own bridge by its store's claim, started before server.bearer was replaced (or made unreadable): not another config's.
  const olderBearer = probe.up && probe.ownServe !== null && probe.sameStore !== true;
  const pid = probe.up && probe.sameStore === true ? probe.health.pid : olderBearer ? probe.ownServe!.pid : undefined;
  const mainPid = m.ran && typeof pid === 'number' ? serviceMainPid(kind) : undefined;
  const serviceProcess = mainPid === undefined ? null : mainPid === pid;
  const byHand = serviceProcess === false ? `, but not the service's process: pid ${String(pid)} was started otherwise (by hand?)${mainPid === null ? ' and the service runs none' : `, the service's is pid ${mainPid}`}; ${installed ? `stop it with ${commandLine(configFile, 'stop')} and let the service run` : 'no service is installed, so it is the one serving this config'}` : '';
  const status: ServiceStatus = {
    kind,
    file,
    installed,
    upToDate,
    installRefusal: refusal,
    enabled,
    manager: managerWord,
    answering: probe.up && (probe.sameStore !== false || olderBearer),
    serviceProcess,
    health: !probe.up
      ? `${probe.url}: not answering (${probe.why})`
      : `${probe.url}: ${clean(String(probe.health.status).slice(0, 64))} (version ${clean(String(probe.health.version).slice(0, 64))})${olderBearer ? `, this config's bridge (pid ${probe.ownServe!.pid}, by the claim of its store) running with a server.bearer ${probe.sameStore === null ? 'that cannot be read now' : 'replaced since it started'}: restart it so callers with the current one are let in${byHand}` : probe.sameStore === false ? `, but NOT this config's bridge: it serves another store than ${config.store.path} or has another server.bearer` : byHand}`,
  };
  if (o.json) printJson(status);
  else {
    const install = commandLine(configFile, 'service install');
    const lines = [
      `service file  ${installed ? file : `not installed (would be ${file}; ${refusal === null ? `run: ${install}` : `service install would refuse: ${refusal}`})`}`,
      ...(installed ? [`up to date    ${upToDate ? 'yes' : refusal === null ? `no: it differs from what \`${install} --force\` would write now` : `no, and \`${install} --force\` would refuse: ${refusal}`}`] : []),
      ...(enabled !== null ? [`enabled       ${enabled ? 'yes' : 'no'}`] : []),
      `${kind === 'systemd' ? 'systemctl' : 'launchctl'}     ${managerWord}`,
      `bridge        ${status.health}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return installed && status.answering && serviceProcess !== false ? 0 : 1;
}
