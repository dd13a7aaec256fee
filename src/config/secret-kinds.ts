import { commandLine, shellWord } from './config-path.js';

/**
 * What each secret file of the config holds, by its key, and which of them the bridge can make
 * itself. The facade's bearer and the Standard Webhooks signing secret are ours to choose, so
 * `a2a-mailbridge secret new <key>` generates them; the IMAP password and a webhook trigger token
 * are issued by someone else and can only be written in.
 */

/** The shortest bearer the bridge takes, in characters (`secret new bearer` writes 64 hex digits). */
export const MIN_BEARER_CHARS = 16;

/** `bearer`: server.bearer_file; `signing-secret`: an agent's secret_file; the others are issued elsewhere. */
export type SecretKind = 'bearer' | 'signing-secret' | 'imap-password' | 'webhook-bearer';

/**
 * The kind of secret a `*_file` key names: `server.bearer_file`, `agents[<i>].webhook.secret_file`,
 * `mailbox.imap.password_file`, `agents[<i>].webhook.bearer_file`. Undefined for any other key.
 */
export function secretKind(key: string): SecretKind | undefined {
  if (key === 'server.bearer_file') return 'bearer';
  if (key === 'mailbox.imap.password_file') return 'imap-password';
  if (/^agents\[\d+\]\.webhook\.secret_file$/.test(key)) return 'signing-secret';
  if (/^agents\[\d+\]\.webhook\.bearer_file$/.test(key)) return 'webhook-bearer';
  return undefined;
}

/**
 * The names of the secret files secrets.example/ shows (`init` writes those its config reads into
 * `secrets/`: all but `webhook-bearer`), each with the key that names it in the example config;
 * `<i>` stands for the agent's index.
 */
export const EXAMPLE_SECRET_FILES: Readonly<Record<string, string>> = {
  bearer: 'server.bearer_file',
  'webhook-secret': 'agents[<i>].webhook.secret_file',
  'webhook-bearer': 'agents[<i>].webhook.bearer_file',
  'imap-password': 'mailbox.imap.password_file',
};

/** True for the kinds `secret new` generates. */
export function isGenerated(kind: SecretKind | undefined): boolean {
  return kind === 'bearer' || kind === 'signing-secret';
}

/**
 * The fix for a missing secret file: `a2a-mailbridge secret new <key>` for a kind the bridge
 * generates (with the `--config` of the config that names it: src/config/config-path.ts), else
 * how to write it with mode 0600.
 *
 * @param configFile the config file whose key names the secret ('' when not known)
 */
export function missingSecretFix(key: string, path: string, configFile = ''): string {
  if (isGenerated(secretKind(key))) return `create it with: ${commandLine(configFile, `secret new ${shellWord(key)}`)}`;
  return `create it with mode 0600: umask 077 && printf '%s' '<secret>' > ${shellWord(path)}`;
}
