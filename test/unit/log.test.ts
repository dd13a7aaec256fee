import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, prettyDestination } from '../../src/log.js';

describe('readable log lines for a terminal', () => {
  it('one line per entry: time, level, message, then the fields as JSON; secrets redacted, control characters escaped', () => {
    let out = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString('utf8');
        done();
      },
    });
    const log = createLogger('info', prettyDestination(sink, false));
    log.warn({ status: 403, host: 'evil\x1b[2J.example', bearer: 'the-bearer-value' }, 'request refused: 403');
    log.debug('not at info');
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\] WARN: request refused: 403 \{"status":403,"host":"evil\\u001b\[2J\.example","bearer":"\[redacted\]"\}$/);
    expect(out).not.toContain('the-bearer-value');
    expect(out).not.toContain('\x1b');
  });
});
