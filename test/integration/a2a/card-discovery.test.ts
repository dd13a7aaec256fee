import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { useHarnesses } from '../../helpers/bridge-harness.js';
import { TEST_BEARER } from '../../helpers/config-dir.js';

/**
 * The official SDK given an agent URL as the README and Hermes write it, without its trailing
 * slash: `ClientFactory.createFromUrl('http://…/agents/grok')` resolves the card path relative to
 * it (new URL('.well-known/agent-card.json', base)) and so fetches /agents/.well-known/agent-card.json.
 * With one agent the bridge serves that agent's card there and the call reaches it; with several,
 * the 404 names the URL that works (with the trailing slash), which the SDK then uses.
 */
const suite = useHarnesses();

const authedFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${TEST_BEARER}`);
  return fetch(input, { ...init, headers });
};
const factory = (): ClientFactory =>
  new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })] }));
// The SDK's v1.0 message shape (role 1 = ROLE_USER), as test/integration/round-trip.test.ts sends it.
const send = { message: { role: 1, parts: [{ content: { $case: 'text', value: 'status' }, mediaType: 'text/plain' }], messageId: crypto.randomUUID(), contextId: crypto.randomUUID() } } as never;

describe('the Agent Card through the SDK, agent URL without its trailing slash', () => {
  it('one agent: createFromUrl(".../agents/grok") finds the card and its calls reach grok', async () => {
    const h = await suite.start();
    expect(h.endpoint).toMatch(/\/agents\/grok$/);
    const client = await factory().createFromUrl(h.endpoint);
    const card = await client.getAgentCard();
    expect(card.name).toContain('grok');
    expect(card.supportedInterfaces[0]!.url).toBe(h.endpoint);
    const answer = await client.sendMessage(send);
    // A poll word on a context without a task: the bridge's answer, from grok's endpoint.
    expect(JSON.stringify(answer)).toContain('There is no task on context_id');
  });

  it('several agents: that path is a 404 naming the URL with the trailing slash, which works', async () => {
    const h = await suite.start({ secondAgent: true });
    await expect(factory().createFromUrl(h.endpointOf('claude'))).rejects.toThrow(/Failed to fetch Agent Card from .*\/agents\/\.well-known\/agent-card\.json: 404/);
    const body = (await (await fetch(new URL('.well-known/agent-card.json', h.endpointOf('claude')))).json()) as { error: string; agents: string[] };
    expect(body.agents).toEqual(['grok', 'claude']);
    expect(body.error).toContain(`${new URL(h.endpoint).origin}/agents/<name>/`);
    const client = await factory().createFromUrl(`${h.endpointOf('claude')}/`);
    expect((await client.getAgentCard()).supportedInterfaces[0]!.url).toBe(h.endpointOf('claude'));
  });
});
