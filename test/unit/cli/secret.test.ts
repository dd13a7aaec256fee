import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
  });
});
