import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { makeConfigDir, minimalToml, writeSecret } from '../../helpers/config-dir.js';

/**
 * A bad value ends the reading of its table; the table's unknown keys (a misspelled key after the
 * bad value) are still named in the same run (src/config/fields.ts, Fields.probeUnknown).
 */
describe('a bad value and a misspelled key in one table, both in one run (fresh-user trial)', () => {
  const problems = (toml: string): string[] => {
    try {
      loadConfig(makeConfigDir(toml).configPath);
    } catch (err) {
      return (err as Error).message.split('\n');
    }
    throw new Error('the config loaded');
  };

  it('[server]: the bad value, then the unknown key after it with its fix', () => {
    expect(problems(minimalToml().replace('bearer_file = "bearer"', 'max_body_bytes = "big"\nbearer_file = "bearer"\nmax_conections = 5'))).toEqual([
      'config key server.max_body_bytes: must be an integer from 1024 to 16777216, got "big"',
      expect.stringMatching(/^config key server\.max_conections: is not a known key; did you mean server\.max_connections\? \(known in \[server\]: bearer_file, caller_timeout_s, listen, /),
    ]);
  });

  it('[[agents]] and its [agents.webhook]: each table stopped by a bad value names its unknown keys', () => {
    const toml = minimalToml()
      .replace('address = "agent@agent.example"', 'address = "agent@agent.example"\ndeadline_s = 1\nuntrusted_lable = "x"')
      .replace('auth = "both"', 'auth = "both"\ntimeout_s = 0\nmax_attempt = 2');
    // The agent's reading stopped before its webhook: the unknown keys of both are named (the
    // webhook's bad value is not: the probe finds unknown keys only).
    expect(problems(toml)).toEqual([
      'config key agents[0].deadline_s: must be an integer from 10 to 2592000, got 1',
      expect.stringMatching(/^config key agents\[0\]\.webhook\.max_attempt: is not a known key; did you mean agents\[0\]\.webhook\.max_attempts\? \(known in \[agents\.webhook\]: /),
      expect.stringMatching(/^config key agents\[0\]\.untrusted_lable: is not a known key; did you mean agents\[0\]\.untrusted_label\? \(known in \[agents\]: /),
    ]);
    // The webhook's bad value stops the agent's reading too: both tables' unknown keys are named.
    expect(problems(toml.replace('deadline_s = 1\n', ''))).toEqual([
      'config key agents[0].webhook.timeout_s: must be an integer from 1 to 300, got 0',
      expect.stringMatching(/^config key agents\[0\]\.webhook\.max_attempt: is not a known key; did you mean agents\[0\]\.webhook\.max_attempts\? /),
      expect.stringMatching(/^config key agents\[0\]\.untrusted_lable: is not a known key; did you mean agents\[0\]\.untrusted_label\? /),
    ]);
  });

  it('[mailbox], and a secret file that stops [server]', () => {
    expect(problems(minimalToml().replace('address = "me@bridge.test"', 'address = "me@bridge.test"\ncheck_interval_s = -1\nwatch_tik_s = 3'))).toEqual([
      'config key mailbox.check_interval_s: must be an integer from 0 to 3600, got -1',
      expect.stringMatching(/^config key mailbox\.watch_tik_s: is not a known key; did you mean mailbox\.watch_tick_s\? /),
    ]);
    const c = makeConfigDir(minimalToml().replace('bearer_file = "bearer"', 'bearer_file = "bearer"\npol_words = []'));
    writeSecret(c.dir, 'bearer', 'replace-with-a-long-random-token');
    expect(() => loadConfig(c.configPath)).toThrow(/still holds the placeholder from secrets\.example[^\n]*\nconfig key server\.pol_words: is not a known key; did you mean server\.poll_words\?/);
  });

  it('a bad choice names no key unknown: its default could read other keys than the value meant', () => {
    // auth = "oauth" (meant "oauth2"): the default, "password", would not read the oauth2_* keys.
    const toml = minimalToml().replace('kind = "maildir"', 'kind = "imap"').replace('[mailbox.maildir]\npath = "Maildir"', '[mailbox.imap]\nhost = "imap.example.com"\nuser = "me"\npassword_file = "imap-password"\nauth = "oauth"\noauth2_client_id = "abc"');
    expect(problems(toml)).toEqual([expect.stringMatching(/^config key mailbox\.imap\.auth: must be one of "password", "oauth2", got "oauth"/)]);
  });
});
