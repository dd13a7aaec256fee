import { pino, type DestinationStream, type Logger } from 'pino';

/**
 * Paths pino blanks out wherever they appear in a log object (issue 6: no secret in logs). The
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

/** Where service logs go (issue 6): a rotating file, or stdout when systemd (journald) runs us. */
export interface LogConfig {
  level: string;
  /** Absolute path of the log file (rotated copies are numbered beside it); unset: stderr. */
  file?: string;
  /** Size at which the file is rotated, in bytes. */
  maxBytes: number;
  /** Rotated files kept. */
  maxFiles: number;
}

/** True when systemd started us with journald on stdout (it sets JOURNAL_STREAM and INVOCATION_ID). */
export function underSystemd(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.JOURNAL_STREAM && env.INVOCATION_ID);
}

/**
 * The `serve` logger: JSON lines with secrets redacted, to stdout under systemd (journald keeps
 * and rotates them), else to `log.file` rotated by size with pino-roll (launchd never rotates its
 * StandardOutPath: FACTS.md "Service"), else — a foreground run without `log.file` — to stderr.
 */
export function createServiceLogger(c: LogConfig): Logger {
  if (underSystemd()) return createLogger(c.level, pino.destination(1));
  if (!c.file) return createLogger(c.level);
  const transport = pino.transport({
    target: 'pino-roll',
    options: { file: c.file, size: `${Math.max(1, Math.round(c.maxBytes / 1024))}k`, limit: { count: c.maxFiles }, mkdir: true },
  });
  return createLogger(c.level, transport);
}

/**
 * JSON-lines logger.
 * @param level pino level name (`info`, `warn`, `silent`…)
 * @param destination where lines go; stderr by default
 */
export function createLogger(level = 'info', destination?: DestinationStream): Logger {
  return pino(
    { level, base: { name: 'a2a-mailbridge' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime },
    destination ?? pino.destination(2),
  );
}
