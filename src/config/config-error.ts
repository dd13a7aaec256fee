/**
 * The errors of a config: one key's ({@link ConfigError}), several found in one pass
 * ({@link ConfigErrors}), and how many of them one message lists ({@link oneError}).
 */

/** The `key` of a {@link ConfigError} about the config file itself (unreadable, writable by others), not one of its keys. */
export const FILE_KEY = '(file)';

/** Thrown for any invalid configuration. `key` is the dotted TOML key (e.g. `agents[0].webhook.url`). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /**
   * A bad value of a key that decides which other keys are read (every Fields.oneOf in fields.ts:
   * mailbox.kind, a webhook's auth): the probe for unknown keys stops at it, as the default in its
   * place could read other keys than the value meant and call those unknown (Fields.probeUnknown).
   */
  choice = false;
  constructor(
    readonly key: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(key === FILE_KEY ? `config file: ${message}` : `config key ${key}: ${message}`, options);
  }
}

/** A key present in a table that no reader asked for (Fields.rejectUnknown, fields.ts). */
export class UnknownKeyError extends ConfigError {}

/**
 * Several key errors of one file, found in one pass: every unknown key, every key that does not
 * apply, and every bad value (a wrong type or out of range: it ends the reading of its own table,
 * whose readers depend on each other, and the reading goes on with the next table, Fields.collect),
 * plus an error that stopped the whole reading when there was one. `errors` holds
 * each with its own fix; the message is their messages, one a line. Its name stays `ConfigError`:
 * main.ts prints it alike.
 */
export class ConfigErrors extends ConfigError {
  constructor(readonly errors: readonly ConfigError[]) {
    super(errors[0]!.key, '');
    this.message = errors.map((e) => e.message).join('\n');
  }
}

/**
 * The most key problems a config's error lists: the rest are counted in one line after them. A
 * 1 MB config of 94,000 unknown keys made `doctor` print 28 MB (attack review 2, 2026-12-02).
 */
export const MAX_LISTED_KEY_ERRORS = 20;

/**
 * `problems` as one error: the only one itself, several as {@link ConfigErrors}; past
 * {@link MAX_LISTED_KEY_ERRORS}, the first ones and a line counting the rest (key `(file)`);
 * `stopped` (an error that ended the whole reading, thrown outside Fields.collect: a check
 * across tables, if any) last.
 */
export function oneError(problems: readonly ConfigError[], stopped?: ConfigError): ConfigError | undefined {
  let listed = problems;
  if (problems.length > MAX_LISTED_KEY_ERRORS) {
    const more = new ConfigError(FILE_KEY, '');
    more.message = `… and ${problems.length - MAX_LISTED_KEY_ERRORS} more key problems (unknown or misplaced keys, bad values); fix the ones above, then check again to see the rest`;
    listed = [...problems.slice(0, MAX_LISTED_KEY_ERRORS), more];
  }
  const all = stopped ? [...listed, stopped] : listed;
  return all.length === 0 ? undefined : all.length === 1 ? all[0] : new ConfigErrors(all);
}
