/**
 * `a2a-mailbridge auth login <provider>`: the OAuth 2.0 device authorization grant
 * (RFC 8628). Asks the device endpoint for a user code, prints the verification URL and the code,
 * polls the token endpoint at the interval the server gives (RFC 8628 §3.4–3.5: `slow_down` adds
 * 5 s), and stores the refresh token in `mailbox.imap.oauth2_refresh_token_file` with mode 0600.
 * No token is ever printed.
 */
import { loadConfig } from '../config/config.js';
import { commandLine } from '../config/config-path.js';
import { postForm, OAuth2Error, writeSecretFileAtomic } from '../uplink/oauth2.js';
import { CliFailure, UsageError } from './errors.js';
import { clean } from './format.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * @param name the OAuth2 provider the config names (`google`, `microsoft`, `custom`)
 * @returns 0 when the refresh token was stored
 * @throws UsageError when the config does not use OAuth2 for that provider; CliFailure when the grant is refused or expires
 */
export async function runAuthLogin(configFile: string, name: string, o: { out?: (s: string) => void } = {}): Promise<number> {
  const out = o.out ?? ((s: string) => void process.stdout.write(`${s}\n`));
  const config = loadConfig(configFile, { allowMissingGrant: true });
  const imap = config.mailbox.imap;
  const oauth = imap?.oauth2;
  if (!oauth) throw new UsageError('the config does not sign in with OAuth2: set [mailbox.imap] auth = "oauth2" with oauth2_client_id and oauth2_refresh_token_file');
  if (name !== oauth.provider) throw new UsageError(`the config signs in with ${oauth.provider} (mailbox.imap.oauth2_provider), not ${name}; run: ${oauth.login}`);
  const secret: Record<string, string> = oauth.clientSecret ? { client_secret: oauth.clientSecret } : {};
  try {
    const dev = await postForm(oauth.deviceUrl, { client_id: oauth.clientId, scope: oauth.scope, ...secret }, 20_000);
    const b = dev.body as Record<string, unknown>;
    const url = typeof b.verification_uri === 'string' ? b.verification_uri : typeof b.verification_url === 'string' ? b.verification_url : null;
    if (dev.status >= 400 || typeof b.device_code !== 'string' || typeof b.user_code !== 'string' || !url) {
      throw new CliFailure(`the device endpoint ${oauth.deviceUrl.origin} refused: ${typeof b.error === 'string' ? b.error : `HTTP ${dev.status}`}${typeof b.error_description === 'string' ? ` (${clean(b.error_description)})` : ''}; check mailbox.imap.oauth2_client_id`);
    }
    out(clean(`To sign in ${imap.user}, open ${url} and enter the code ${b.user_code}`));
    let interval = (typeof b.interval === 'number' && b.interval >= 0 ? b.interval : 5) * 1000;
    const until = Date.now() + (typeof b.expires_in === 'number' ? b.expires_in * 1000 : 900_000);
    for (;;) {
      if (Date.now() > until) throw new CliFailure('the code expired before the sign-in was approved; run the command again');
      await sleep(interval);
      const t = await postForm(oauth.tokenUrl, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: b.device_code, client_id: oauth.clientId, ...secret }, 20_000);
      const err = typeof t.body.error === 'string' ? t.body.error : null;
      if (err === 'authorization_pending') continue;
      if (err === 'slow_down') {
        interval += 5000;
        continue;
      }
      if (err === 'access_denied') throw new CliFailure('the sign-in was declined');
      if (err === 'expired_token') throw new CliFailure('the code expired before the sign-in was approved; run the command again');
      if (err || typeof t.body.refresh_token !== 'string' || t.body.refresh_token === '') {
        throw new CliFailure(`the token endpoint ${oauth.tokenUrl.origin} answered ${err ?? `HTTP ${t.status} without a refresh token (does the scope include offline access?)`}`);
      }
      writeSecretFileAtomic(oauth.refreshTokenFile, t.body.refresh_token);
      out(clean(`signed in; the refresh token is in ${oauth.refreshTokenFile} (mode 0600). Its next token refresh reads it; to use it now, restart the bridge if it runs: ${commandLine(configFile, 'stop')}, then ${commandLine(configFile, 'serve')}`));
      return 0;
    }
  } catch (err) {
    if (err instanceof OAuth2Error) throw new CliFailure(err.message, { cause: err });
    throw err;
  }
}
