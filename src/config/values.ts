/** Value readers shared by the config's tables: addresses, loopback literals, secret files. */
import { isIP } from 'node:net';
import { ConfigError, type Fields } from './fields.js';
import { readSecretFile, SecretFileError } from './secret-file.js';

/** A plain address like `agent@example.com` (no display name, no angle brackets). */
export const ADDRESS_RE = /^[^\s@<>"]+@[a-z0-9.-]+\.[a-z0-9-]+$/i;

/** True for 127.0.0.0/8 and ::1 written as IP literals; host names (even `localhost`) are refused. */
export function isLoopbackLiteral(host: string): boolean {
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

/**
 * Reads the secret file a `*_file` key names (relative to `baseDir`) with the safety checks of
 * {@link readSecretFile}; a token (it goes into an HTTP header) must be one line of visible ASCII.
 * With `f.skipSecrets` it reads nothing and returns '' (a real secret is never empty).
 * @throws ConfigError naming the key, the file and the fix
 */
export function secret(f: Fields, name: string, baseDir: string, o: { token?: boolean } = {}): string {
  const p = f.path(name, baseDir);
  if (f.skipSecrets) return '';
  let value: string;
  try {
    value = readSecretFile(p, f.key(name), f.configFile);
  } catch (err) {
    if (err instanceof SecretFileError) throw new ConfigError(f.key(name), err.message.replace(/^[^:]+: /, ''), { cause: err });
    throw err;
  }
  // A token goes into an HTTP header: whitespace in it (a second trailing newline, a pasted
  // space) would make every request fail later with 401, so refuse it now.
  if (o.token && /[^\x21-\x7e]/.test(value) && !/\s/.test(value)) {
    throw new ConfigError(f.key(name), `secret file ${p} holds characters outside visible ASCII; a token goes into an HTTP header, use letters, digits and punctuation`);
  }
  if (o.token && /\s/.test(value)) {
    throw new ConfigError(f.key(name), `secret file ${p} contains whitespace (a second trailing newline?); a token is one line without spaces`);
  }
  return value;
}

