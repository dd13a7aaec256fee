import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { TEST_BEARER } from '../../helpers/config-dir.js';
import { useHarness } from '../../helpers/bridge-harness.js';

/**
 * Discovery for both generations (docs/discovery.md): `/.well-known/agent-card.json` answers by
 * `A2A-Version` — v1.x gets the pure v1.0 card, an empty one (A2A v1.0 §3.6.2: "Agents MUST
 * interpret empty value as 0.3 version") the v0.3 card with the v1.0 interfaces embedded — with
 * ETag, Cache-Control, Last-Modified and Vary, and 304 for a conditional GET (§8.6.1).
 */

const suite = useHarness({});

type Card = Record<string, unknown> & { supportedInterfaces?: { url: string; protocolBinding: string; protocolVersion: string }[] };

describe('discovery (both generations)', () => {
  it('a v1.0 caller gets the pure v1.0 card; a caller without A2A-Version gets the v0.3 card, its url the JSON-RPC endpoint, and the v1.0 interfaces first', async () => {
    const { h } = suite;
    const at = `${h.endpoint}/.well-known/agent-card.json`;
    const v1 = (await (await fetch(at, { headers: { 'a2a-version': '1.0' } })).json()) as Card;
    expect(Object.keys(v1).sort()).toEqual(
      ['capabilities', 'defaultInputModes', 'defaultOutputModes', 'description', 'name', 'securityRequirements', 'securitySchemes', 'skills', 'supportedInterfaces', 'version'].sort(),
    );
    expect((await (await fetch(`${at}?A2A-Version=1.0`)).json()) as Card).toEqual(v1);
    const v03 = (await (await fetch(at)).json()) as Card;
    expect(v03).toMatchObject({ protocolVersion: '0.3.0', url: h.endpoint, preferredTransport: 'JSONRPC', capabilities: { streaming: true, pushNotifications: true } });
    expect(v03.supportedInterfaces![0]).toEqual({ url: h.endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect((await (await fetch(at, { headers: { 'a2a-version': '0.3' } })).json()) as Card).toEqual(v03);
    // the legacy path stays the plain v0.3 card
    expect(((await (await fetch(`${h.endpoint}/.well-known/agent.json`)).json()) as Card).supportedInterfaces).toBeUndefined();

    // both SDK generations find the agent from the same URL
    const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${TEST_BEARER}` } });
    const modern = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: authed })] })).createFromUrl(`${h.endpoint}/`);
    expect((await modern.getAgentCard()).capabilities?.pushNotifications).toBe(true);
    // the SDK's compat resolver reads the same URL as a v0.3 card when it sends no version
    const compat = await new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).resolve(`${h.endpoint}/`);
    expect(compat.supportedInterfaces[0]!.url).toBe(h.endpoint);
  });

  it('cards carry ETag, Cache-Control max-age, Last-Modified and Vary; If-None-Match and If-Modified-Since answer 304 with no body', async () => {
    const at = `${suite.h.endpoint}/.well-known/agent-card.json`;
    for (const headers of [{ 'a2a-version': '1.0' }, {}] as Record<string, string>[]) {
      const r = await fetch(at, { headers });
      expect(r.status).toBe(200);
      const etag = r.headers.get('etag')!;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      expect(r.headers.get('cache-control')).toMatch(/max-age=\d+/);
      expect(r.headers.get('vary')).toBe('A2A-Version');
      const modified = r.headers.get('last-modified')!;
      expect(Number.isNaN(Date.parse(modified))).toBe(false);
      const again = await fetch(at, { headers: { ...headers, 'if-none-match': etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      expect((await fetch(at, { headers: { ...headers, 'if-none-match': '"other"' } })).status).toBe(200);
      expect((await fetch(at, { headers: { ...headers, 'if-modified-since': modified } })).status).toBe(304);
    }
    const v1 = (await fetch(at, { headers: { 'a2a-version': '1.0' } })).headers.get('etag');
    const v03 = (await fetch(at)).headers.get('etag');
    expect(v1).not.toBe(v03);
  });
});
