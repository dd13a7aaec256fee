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
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers["webhook-signature"]',
];

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
