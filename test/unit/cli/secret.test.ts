import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/cli/errors.js';
import { runSecretNew } from '../../../src/cli/secret.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';
import { tempFolders } from '../../helpers/temp-folders.js';

/**
 * `secret new` reads its config as `serve` does (src/config/config-file.ts, readCheckedConfig): a
 * config another user could change would choose where the new secret is written.
 */
const { removeAfter } = tempFolders('mb-secret-');

describe('secret new and the config place', () => {
  it('refuses a config in a folder others can write, naming the chmod, and writes nothing', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    chmodSync(c.dir, 0o777);
    const bearer = join(c.dir, 'bearer');
    const before = readFileSync(bearer, 'utf8');
    expect(() => runSecretNew(c.configPath, 'bearer', { force: true })).toThrow(
      `config file: ${c.dir} is writable by others (mode 0777), so they could redirect the bridge; run: chmod go-w ${c.dir}`,
    );
    expect(readFileSync(bearer, 'utf8')).toBe(before);
  });
});

describe('secret new and a name it does not take', () => {
  it("an unknown name: an OAuth2 refresh token is named as the user's, with the command that writes it", () => {
    const c = makeConfigDir(
      minimalToml()
        .replace('kind = "maildir"', 'kind = "imap"')
        .replace('[mailbox.maildir]\npath = "Maildir"', '[mailbox.imap]\nhost = "127.0.0.1"\nuser = "u"\nauth = "oauth2"\noauth2_client_id = "cid"\noauth2_refresh_token_file = "refresh-token"'),
    );
    removeAfter(c.dir);
    expect(() => runSecretNew(c.configPath, 'foo', {})).toThrow(
      `set by you, not generated: mailbox.imap.oauth2_refresh_token_file (set it with: a2a-mailbridge --config ${c.configPath} auth login google), agents[0].webhook.bearer_file`,
    );
    // Asked for by its key: refused, with the command that writes it rather than a hand-written file.
    expect(() => runSecretNew(c.configPath, 'mailbox.imap.oauth2_refresh_token_file', {})).toThrow(
      new RegExp(`not generated here; set it with: a2a-mailbridge --config ${c.configPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} auth login google$`),
    );
  });
});

describe('secret new and a mistyped name', () => {
  it('an --agent no agent of the config is named: says so, lists the agents and the nearest one, and writes nothing', () => {
    const c = makeConfigDir(minimalToml({ extraAgent: '[[agents]]\nname = "claude"\naddress = "c@agent.example"\n[agents.webhook]\nurl = "http://127.0.0.1:9/c"\nauth = "bearer"\nbearer_file = "webhook-bearer"\n' }));
    removeAfter(c.dir);
    const before = readFileSync(join(c.dir, 'webhook-secret'), 'utf8');
    expect(() => runSecretNew(c.configPath, 'webhook-secret', { agent: 'grk', force: true })).toThrow(
      new UsageError(`no agent grk in the config, which has grok, claude (did you mean "grok"?); see a2a-mailbridge --config ${c.configPath} config`),
    );
    expect(readFileSync(join(c.dir, 'webhook-secret'), 'utf8')).toBe(before);
    // An agent of the config without that file: named as an agent, with the agents that have one.
    expect(() => runSecretNew(c.configPath, 'webhook-secret', { agent: 'claude', force: true })).toThrow(
      new UsageError('agent claude has no webhook-secret file; the agents that have one: grok; give one of them with --agent'),
    );
  });

  it('a name within a typo of a valid one: suggests it, as tasks --state does', () => {
    const c = makeConfigDir(minimalToml());
    removeAfter(c.dir);
    const suggested = (name: string): string | undefined => {
      try {
        runSecretNew(c.configPath, name, {});
      } catch (err) {
        return /\(did you mean "([^"]+)"\?\)/.exec((err as Error).message)?.[1];
      }
      throw new Error(`secret new ${name} did not refuse`);
    };
    expect(suggested('webhok-secret')).toBe('webhook-secret');
    expect(suggested('berer')).toBe('bearer');
    expect(suggested('agents[0].webhook.secret_fil')).toBe('agents[0].webhook.secret_file');
    expect(suggested('password')).toBeUndefined();
    expect(() => runSecretNew(c.configPath, 'webhok-secret', {})).toThrow(/^secret new "webhok-secret": not a secret of this config \(did you mean "webhook-secret"\?\); `secret new` generates: bearer, webhook-secret, /);
  });
});
