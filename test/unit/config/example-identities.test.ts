import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { exampleIdentities, exampleIdentitiesText, isReservedDomain } from '../../../src/config/example-identities.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

describe('example identities (RFC 2606)', () => {
  it('names every key still holding a reserved name, and nothing else', () => {
    expect(['example.com', 'mx.example.org', 'agent.example', 'bridge.test', 'x.invalid', 'localhost', 'fastmail.com', 'example.com.au', 'myexample.com'].map(isReservedDomain)).toEqual([
      true, true, true, true, true, true, false, false, false,
    ]);
    const c = makeConfigDir(minimalToml({ webhookUrl: 'https://hooks.agent.example/trigger' }));
    const found = exampleIdentities(loadConfig(c.configPath));
    expect(found).toEqual([
      { key: 'mailbox.address', value: 'me@bridge.test' },
      { key: 'agents[0].address', value: 'agent@agent.example' },
      { key: 'agents[0].dkim_domain', value: 'agent.example' },
      { key: 'agents[0].webhook.url', value: 'https://hooks.agent.example' },
    ]);
    expect(exampleIdentitiesText(found.slice(0, 1))).toBe('mailbox.address = me@bridge.test is an example name (RFC 2606): no real mail or agent lives there');
  });
});
