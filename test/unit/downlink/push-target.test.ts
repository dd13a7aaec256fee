import { describe, expect, it } from 'vitest';
import { isLoopbackAddress, pushUrlProblem } from '../../../src/downlink/push-target.js';

/** Which push destinations count as loopback (src/downlink/push-target.ts; docs/push.md). */
describe('push destinations', () => {
  it('loopback: 127/8, ::1 and IPv4-mapped 127/8 in dotted and in hex form; nothing else', () => {
    for (const a of ['127.0.0.1', '127.255.0.9', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F12:3456']) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of ['10.0.0.1', '0.0.0.0', '::', '::ffff:10.0.0.1', '::ffff:a00:1', '::ffff:8000:1', '::127.0.0.1', '128.0.0.1', 'localhost']) expect(isLoopbackAddress(a)).toBe(false);
  });

  it('a URL naming IPv4-mapped loopback is allowed as the docs say (the URL parser writes it in hex); a mapped other address is not', () => {
    expect(pushUrlProblem('http://[::ffff:127.0.0.1]:9/hook', [])).toBeNull();
    expect(pushUrlProblem('http://[::ffff:10.0.0.1]:9/hook', [])).not.toBeNull();
  });
});
