/**
 * The provider keys of `[mailbox]` and the sign-in keys of `[mailbox.imap]`: which
 * preset recognises the trusted Authentication-Results (src/uplink/providers.ts, docs/providers.md),
 * and password or OAuth2 sign-in for IMAP.
 */
import { profileOf, type ProviderProfile } from '../uplink/border.js';
import { OAUTH2_PRESETS, PRESETS, PROVIDER_NAMES, type OAuth2PresetName, type ProviderName } from '../uplink/providers.js';
import { commandLine, shellWord } from './config-path.js';
import { ConfigError, type Fields } from './fields.js';
import { isLoopbackLiteral, secret } from './values.js';

/** OAuth2 sign-in for IMAP (RFC 6749 refresh grant; SASL XOAUTH2/OAUTHBEARER, RFC 7628). */
export interface OAuth2Config {
  /** `google`, `microsoft`, or `custom` (endpoints given by hand). */
  provider: OAuth2PresetName | 'custom';
  clientId: string;
  /** Google's installed-app clients need one; Microsoft public clients have none. */
  clientSecret: string | null;
  /** Token endpoint (RFC 6749 §3.2). */
  tokenUrl: URL;
  /** Device authorization endpoint (RFC 8628 §3.1), for `auth login`. */
  deviceUrl: URL;
  scope: string;
  /** Absolute path of the 0600 file holding the refresh token (written by `auth login`). */
  refreshTokenFile: string;
  /** The refresh token read at start; null only when the loader was told the grant may be missing (`auth login`). */
  refreshToken: string | null;
  /** What to run to get a grant for this sign-in: `a2a-mailbridge [--config <file>] auth login <provider>` (src/config/config-path.ts). */
  login: string;
}

export interface ProviderChoice {
  provider: ProviderName;
  profile: ProviderProfile;
}

/** The probes no provider pattern may match: a pattern that does trusts results anyone can write. */
const PROBES = ['attacker.example', 'mx.attacker.example', 'localhost', ''];

/**
 * `mailbox.provider` (default `fastmail`), with `authserv_id` / `border_host` overriding the
 * preset's patterns. The older `provider_host` (both at once) is refused, naming the two keys.
 * @throws ConfigError for `provider_host`, an unknown provider, a `self-hosted` provider without both patterns, a
 *   pattern that matches any host, or `verify_dkim = false` with a provider whose results do not
 *   name the signature (Microsoft, Yahoo).
 */
export function parseProvider(f: Fields, verifyDkim: boolean): ProviderChoice {
  const provider = f.oneOf('provider', PROVIDER_NAMES, 'fastmail');
  if (f.hasRetired('provider_host')) {
    // The older key set both patterns at once; refused, not read, so the two are always set on purpose.
    throw new ConfigError(
      f.key('provider_host'),
      `is no longer read; set authserv_id (the authserv-id your provider writes) and border_host (its MX in the Received \`by\` clause) instead: the same pattern in both does what provider_host did; ${commandLine(f.configFile, 'provider detect --file <a mail>')} prints both`,
    );
  }
  const explicit = (key: 'authserv_id' | 'border_host'): RegExp | undefined => {
    if (!f.has(key)) return undefined;
    const re = f.pattern(key);
    const bad = PROBES.find((h) => re.test(h));
    if (bad !== undefined) {
      throw new ConfigError(f.key(key), `matches hosts that are not your provider's (e.g. "${bad}"); name the provider's hosts, e.g. '[a-z0-9-]+\\.messagingengine\\.com'`);
    }
    return re;
  };
  const authservId = explicit('authserv_id');
  const borderHost = explicit('border_host');
  if (provider === 'self-hosted' && (!authservId || !borderHost)) {
    const key = authservId ? 'border_host' : 'authserv_id';
    throw new ConfigError(f.key(key), `is required with provider = "self-hosted" (your MTA's host name as a pattern); print it with: ${commandLine(f.configFile, 'provider detect --file <a mail you received from outside>')}`);
  }
  const profile = profileOf(provider, { ...(authservId ? { authservId } : {}), ...(borderHost ? { borderHost } : {}) });
  if (!verifyDkim && !authservId && (provider === 'outlook' || provider === 'yahoo')) {
    throw new ConfigError(f.key('verify_dkim'), `must stay true with provider = "${provider}": ${PRESETS[provider].label} results name no DKIM signature (no header.b), so the bridge verifies the agent's signature itself`);
  }
  return { provider, profile };
}

function url(t: Fields, key: string, fallback: string | undefined): URL {
  const v = t.string(key, fallback);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(t.key(key), `must be an https URL, got ${JSON.stringify(v)}`);
  }
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackLiteral(host))) {
    throw new ConfigError(t.key(key), `must be an https URL (http only for a loopback address), got ${JSON.stringify(v)}`);
  }
  return u;
}

/**
 * `[mailbox.imap] auth = "password" | "oauth2"` and its keys. With `oauth2` the refresh token
 * file is read with the same rules as every secret file (src/config/secret-file.ts); a missing
 * file is an error naming `auth login`, unless `allowMissingGrant` (the login command itself).
 * @returns the password ('' with OAuth2) and the OAuth2 settings
 */
export function parseImapAuth(t: Fields, baseDir: string, provider: ProviderName, o: { allowMissingGrant?: boolean } = {}): { password: string; oauth2?: OAuth2Config } {
  const auth = t.oneOf('auth', ['password', 'oauth2'] as const, 'password');
  if (auth === 'password') return { password: secret(t, 'password_file', baseDir) };
  if (t.has('password_file')) t.refuse('password_file', 'applies only when auth = "password"; remove it (OAuth2 uses oauth2_refresh_token_file)');
  const presetName = PRESETS[provider].oauth2;
  const named = t.oneOf('oauth2_provider', ['google', 'microsoft', 'custom'] as const, presetName ?? 'custom');
  const preset = named === 'custom' ? undefined : OAUTH2_PRESETS[named];
  const tokenFile = t.path('oauth2_refresh_token_file', baseDir);
  const cfg: OAuth2Config = {
    provider: named,
    clientId: t.string('oauth2_client_id'),
    clientSecret: t.has('oauth2_client_secret_file') ? secret(t, 'oauth2_client_secret_file', baseDir, { token: true }) : null,
    tokenUrl: url(t, 'oauth2_token_url', preset?.tokenUrl),
    deviceUrl: url(t, 'oauth2_device_url', preset?.deviceUrl),
    scope: t.string('oauth2_scope', preset?.scope),
    refreshTokenFile: tokenFile,
    refreshToken: null,
    login: commandLine(t.configFile, `auth login ${shellWord(named)}`),
  };
  try {
    cfg.refreshToken = secret(t, 'oauth2_refresh_token_file', baseDir, { token: true });
  } catch (err) {
    const missing = err instanceof ConfigError && /does not exist/.test(err.message);
    if (!(missing && o.allowMissingGrant)) {
      // The cause stays the secret reader's: the file is missing, not the key wrong (doctor says so once).
      if (missing) throw new ConfigError(t.key('oauth2_refresh_token_file'), `${tokenFile} does not exist yet; sign in once with: ${cfg.login}`, { cause: err.cause ?? err });
      throw err;
    }
  }
  return { password: '', oauth2: cfg };
}
