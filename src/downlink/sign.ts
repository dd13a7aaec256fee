import { Webhook } from 'standardwebhooks';
import type { WebhookConfig } from '../config/config.js';

/**
 * The request headers of one webhook attempt (docs/architecture.md, "The webhook envelope").
 * `webhook-id` is the dispatch id, the
 * same on every attempt; `webhook-timestamp` and `webhook-signature` are fresh per attempt
 * (github.com/flippercloud/flipper/pull/1022). The signature covers `${id}.${timestamp}.${body}`
 * exactly as the body bytes are sent (Standard Webhooks spec, "Signature scheme").
 *
 * @param at the attempt time; a Date, because `Webhook.sign` silently signs 1970 when given seconds
 * @returns header name → value; `authorization` for bearer, the three `webhook-*` headers for
 *   Standard Webhooks, both for `both`, plus `content-type`.
 */
export function webhookHeaders(hook: WebhookConfig, dispatchId: string, body: Buffer, at: Date): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'a2a-mailbridge',
  };
  if (hook.auth !== 'standard-webhooks') {
    if (!hook.bearer) throw new TypeError('a2a-mailbridge: webhook auth needs a bearer');
    headers.authorization = `Bearer ${hook.bearer}`;
  }
  if (hook.auth !== 'bearer') {
    if (!hook.signingSecret) throw new TypeError('a2a-mailbridge: webhook auth needs a signing secret');
    headers['webhook-id'] = dispatchId;
    headers['webhook-timestamp'] = String(Math.floor(at.getTime() / 1000));
    headers['webhook-signature'] = new Webhook(hook.signingSecret).sign(dispatchId, at, body);
  }
  return headers;
}
