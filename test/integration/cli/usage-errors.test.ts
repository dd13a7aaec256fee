import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

/**
 * How a wrong command line reads, run as the user runs it (a child process): commander's own
 * errors start `a2a-mailbridge: ` as the CLI's own do, keep commander's exit code mapping (2) and
 * its suggestion, and quote the command line escaped (src/cli/main.ts).
 */
describe('usage errors', () => {
  it("commander's own errors (missing argument, unknown option, unknown command) read as the CLI's own and exit 2", async () => {
    const runs = await Promise.all([
      runCli(['secret', 'new']),
      runCli(['tasks', '--no-such-option']),
      runCli(['statu']),
      runCli(['tasks', '--bo\u001b[2Jgus']),
    ]);
    expect(runs.map((r) => [r.status, r.stdout, r.stderr])).toEqual([
      [2, '', "a2a-mailbridge: missing required argument 'name'\n"],
      [2, '', "a2a-mailbridge: unknown option '--no-such-option'\n"],
      [2, '', "a2a-mailbridge: unknown command 'statu'\n(Did you mean status?)\n"],
      [2, '', "a2a-mailbridge: unknown option '--bo\\u{1b}[2Jgus'\n"],
    ]);
  });

  it('demo --reply-delay with a unit says the value is a whole number of milliseconds (exit 2, no demo run)', async () => {
    const r = await runCli(['demo', '--reply-delay', '5s']);
    expect([r.status, r.stdout, r.stderr]).toEqual([2, '', 'a2a-mailbridge: --reply-delay takes a whole number of milliseconds, 0 to 600000; got "5s"\n']);
  });
});
