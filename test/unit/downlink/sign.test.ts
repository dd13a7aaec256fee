import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { WebhookConfig } from '../../../src/config/config.js';
import { webhookHeaders } from '../../../src/downlink/sign.js';

const secretBytes = Buffer.from('0123456789abcdef0123456789abcdef');
const hook: WebhookConfig = {
  url: new URL('https://agent.example/hook'),
  auth: 'both',
  bearer: 'agent-bearer-xyz',
  signingSecret: `whsec_${secretBytes.toString('base64')}`,
  timeoutMs: 1000,
  maxAttempts: 3,
  maxAgeMs: 60_000,
  notifyCancel: false,
  maxPerMinute: 10,
};

describe('webhookHeaders', () => {
  const body = Buffer.from('{"v":1,"ask":"héllo"}', 'utf8');
  const at = new Date('2026-11-30T12:00:00.500Z');

  it('signs `${id}.${seconds}.${body}` with HMAC-SHA256 over the exact bytes (computed independently)', () => {
    const h = webhookHeaders(hook, 'msg_1', body, at);
    const expected = createHmac('sha256', secretBytes).update(Buffer.concat([Buffer.from('msg_1.1796040000.'), body])).digest('base64');
    expect(h['webhook-signature']).toBe(`v1,${expected}`);
    expect(h['webhook-timestamp']).toBe('1796040000');
    expect(h['webhook-id']).toBe('msg_1');
    expect(h.authorization).toBe('Bearer agent-bearer-xyz');
  });

  it('is verified by the official standardwebhooks library', () => {
    const h = webhookHeaders(hook, 'msg_2', body, new Date());
    expect(new Webhook(hook.signingSecret!).verify(body.toString('utf8'), h)).toEqual({ v: 1, ask: 'héllo' });
  });

  it('keeps webhook-id across attempts and changes timestamp and signature', () => {
    const a = webhookHeaders(hook, 'msg_3', body, new Date(1_800_000_000_000));
    const b = webhookHeaders(hook, 'msg_3', body, new Date(1_800_000_060_000));
    expect(a['webhook-id']).toBe(b['webhook-id']);
    expect(a['webhook-timestamp']).not.toBe(b['webhook-timestamp']);
    expect(a['webhook-signature']).not.toBe(b['webhook-signature']);
  });

  it('sends only what the auth mode asks for', () => {
    const bearerOnly = webhookHeaders({ ...hook, auth: 'bearer' }, 'm', body, at);
    expect(bearerOnly['webhook-signature']).toBeUndefined();
    expect(bearerOnly.authorization).toBeDefined();
    const swOnly = webhookHeaders({ ...hook, auth: 'standard-webhooks' }, 'm', body, at);
    expect(swOnly.authorization).toBeUndefined();
    expect(swOnly['webhook-signature']).toMatch(/^v1,/);
  });
});
