/**
 * The agent's replies take the messageId `reply-<ledger id>` in the `messages` table the callers'
 * messages share (src/core/reply-message-id.ts): a caller's messageId of that form is refused, so
 * it can never take the id of a reply to come (attack review 8: a caller's `reply-1`, in another
 * context, made the agent's genuine reply given ledger row 1 fail its apply and be recorded
 * `unreadable`).
 */
import { describe, expect, it } from 'vitest';
import { BridgeError } from '../../../src/core/errors.js';
import { isReplyMessageId, replyMessageId } from '../../../src/core/reply-message-id.js';
import { send, submitContext } from '../../helpers/submit-context.js';

describe('the messageIds of the agent replies are not the callers’', () => {
  it('refuses a caller messageId of the form reply-<n>, new work and poll alike, storing nothing', () => {
    const ctx = submitContext();
    for (const id of [replyMessageId(1), 'reply-42']) {
      const err = (() => {
        try {
          send(ctx, 'job', id);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(BridgeError);
      expect(err).toMatchObject({ code: 'invalid-request' });
      expect(ctx.store.messages.byId('grok', id)).toBeUndefined();
    }
    const first = send(ctx, 'job', 'm-first');
    expect(first.kind).toBe('new');
    expect(() => send(ctx, 'status', 'reply-2')).toThrow(BridgeError);
    expect(ctx.store.messages.byId('grok', 'reply-2')).toBeUndefined();
  });

  it('takes ids that only look alike: no reply row is ever given them', () => {
    expect(['reply-0', 'reply-01', 'reply-1a', 'Reply-1', 'reply-', 'my-reply-1'].filter(isReplyMessageId)).toEqual([]);
    expect(send(submitContext(), 'job', 'reply-01').kind).toBe('new');
  });
});
