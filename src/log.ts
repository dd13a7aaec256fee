import { readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join } from 'node:path';
import { pino, type DestinationStream, type Logger } from 'pino';
import type Pretty from 'pino-pretty';

// pino-pretty (a terminal) and pino-roll (log.file) are loaded only by the configuration that
// uses them: a service logging to journald or stderr never pays for them (memory and start-up:
// bench/RESULTS.md, machine-limit).
const require = createRequire(import.meta.url);

/**
 * Paths pino blanks out wherever they appear in a log object (no secret in logs). The
 * code never logs a token, bearer or password on purpose; this is the second fence.
 */
export const REDACT_PATHS = [
  'reply_token',
  '*.reply_token',
  'token',
  '*.token',
  'bearer',
  '*.bearer',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'signingSecret',
  '*.signingSecret',
  'accessToken',
  '*.accessToken',
  'access_token',
  '*.access_token',
  'refreshToken',
  '*.refreshToken',
  'refresh_token',
  '*.refresh_token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers["webhook-signature"]',
];

/** Where service logs go: a rotating file, or stdout when systemd (journald) runs us. */
export interface LogConfig {
  level: string;
  /** Absolute path of the log file (rotated copies are numbered beside it); unset: stderr. */
  file?: string;
  /** Size at which the file is rotated, in bytes. */
  maxBytes: number;
  /** Rotated files kept beside the one being written (so at most `maxFiles + 1` files). */
  maxFiles: number;
}

/** True when systemd started us with journald on stdout (it sets JOURNAL_STREAM and INVOCATION_ID). */
export function underSystemd(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.JOURNAL_STREAM && env.INVOCATION_ID);
}

/**
 * Where `serve`'s log goes ({@link createServiceLogger}): the journal (stdout under systemd, which
 * takes stderr into the journal too), `log.file`, or stderr.
 */
export function serviceLogTarget(c: Pick<LogConfig, 'file'>, env: NodeJS.ProcessEnv = process.env): 'journal' | 'file' | 'stderr' {
  if (underSystemd(env)) return 'journal';
  return c.file ? 'file' : 'stderr';
}

/**
 * The numbered files pino-roll writes for `file` (`logs/mailbridge.log` → `mailbridge.<n>.log`,
 * a file without an extension gets `.log`), as `[name, n]`, oldest (lowest n) first.
 */
export function rolledLogFiles(file: string): [string, number][] {
  const ext = extname(file) || '.log';
  const base = basename(file, extname(file));
  const dir = dirname(file);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: [string, number][] = [];
  for (const name of names) {
    if (!name.startsWith(`${base}.`) || !name.endsWith(ext)) continue;
    const n = name.slice(base.length + 1, name.length - ext.length);
    if (/^\d+$/.test(n)) out.push([join(dir, name), Number(n)]);
  }
  return out.sort((a, b) => a[1] - b[1]);
}

/**
 * Removes the oldest numbered log files so that at most `keep` remain. pino-roll prunes only when
 * it rotates, so without this a run that never rotates leaves what earlier runs wrote (10 restarts
 * with `max_files = 2` left 11 files).
 */
export function pruneLogFiles(file: string, keep: number): void {
  const files = rolledLogFiles(file);
  for (const [path] of files.slice(0, Math.max(0, files.length - keep))) rmSync(path, { force: true });
}

/**
 * Human-readable log lines for a terminal (pino-pretty, in-process and synchronous): the time, the
 * level, the message, then the fields as JSON on the same line (so a field's text cannot drive the
 * terminal). Redaction happens before, in the logger.
 *
 * @param destination a file descriptor (2: stderr) or a stream
 */
export function prettyDestination(destination: number | NodeJS.WritableStream, colorize: boolean): DestinationStream {
  const pretty = require('pino-pretty') as typeof Pretty;
  return pretty({ destination, sync: true, colorize, singleLine: true, translateTime: 'SYS:HH:MM:ss', ignore: 'name,pid,hostname' });
}

/**
 * The `serve` logger: JSON lines with secrets redacted, to stdout under systemd (journald keeps
 * and rotates them), else to `log.file` rotated by size with pino-roll (launchd never rotates its
 * StandardOutPath), else — a foreground run without `log.file` — to stderr,
 * as readable lines when stderr is a terminal (`o.terminal`).
 *
 * The file holds `log.max_size_mb` plus at most the lines of one event-loop turn: pino-roll runs in
 * this thread and writes each line synchronously, so its size check sees every line (through a
 * worker-thread transport it saw the batches, and a burst wrote files of 3× the size). At start
 * and at every rotation, files beyond `max_files` rotated plus the current one are removed,
 * whichever run wrote them.
 */
export async function createServiceLogger(c: LogConfig, o: { terminal?: boolean } = {}): Promise<Logger> {
  const target = serviceLogTarget(c);
  if (target === 'journal') return createLogger(c.level, pino.destination(1));
  if (target === 'stderr' || !c.file) return createLogger(c.level, o.terminal ? prettyDestination(2, true) : undefined);
  // pino-roll goes on writing the highest-numbered file: keep it and max_files older ones.
  pruneLogFiles(c.file, c.maxFiles + 1);
  const { default: pinoRoll } = await import('pino-roll');
  const destination = await pinoRoll({
    file: c.file,
    size: `${Math.max(1, Math.round(c.maxBytes / 1024))}k`,
    limit: { count: c.maxFiles + 1, removeOtherLogFiles: true },
    mkdir: true,
    sync: true,
    // Each file it creates (at start and at every rotation) readable by this user only: the log
    // holds task ids, agents and verdicts.
    mode: 0o600,
  });
  return createLogger(c.level, destination);
}

/**
 * JSON-lines logger.
 * @param level pino level name (`info`, `warn`, `silent`…)
 * @param destination where lines go; stderr by default
 */
/** A log line that stands for many: written at most once per key per period, the rest counted. */
export type LimitedLog = (at: number, level: 'info' | 'warn', key: string, fields: Record<string, unknown>, msg: string) => boolean;

/**
 * A log whose lines a flood cannot multiply: per `key`, at most one line every `everyMs` (`at`:
 * the caller's clock, ms); a line written after others were left out carries `suppressedSinceLast`, their
 * count. Every call is also written at debug level, so nothing is lost to an operator who asks.
 * The keys are the caller's to bound (a verdict, an HTTP status: a fixed set). Returns whether the
 * line was written at `level`.
 */
export function limitedLog(log: Logger, everyMs: number): LimitedLog {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (t, level, key, fields, msg) => {
    const seen = last.get(key);
    if (seen && t - seen.at < everyMs) {
      seen.suppressed += 1;
      log.debug(fields, msg);
      return false;
    }
    log[level]({ ...fields, ...(seen?.suppressed ? { suppressedSinceLast: seen.suppressed } : {}) }, msg);
    last.set(key, { at: t, suppressed: 0 });
    return true;
  };
}

export function createLogger(level = 'info', destination?: DestinationStream): Logger {
  return pino(
    { level, base: { name: 'a2a-mailbridge' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination ?? pino.destination(2),
  );
}
