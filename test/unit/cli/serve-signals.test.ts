import { describe, expect, it } from 'vitest';
import { namesServe } from '../../../src/cli/serve-signals.js';

/**
 * Which command lines hold Ctrl-C and SIGTERM from the process's start (src/cli/serve-signals-early.ts):
 * `serve` only, so every other command keeps Node's default (a signal ends it).
 */
describe('namesServe', () => {
  it('serve, after -c/--config and its value or other options', () => {
    expect(namesServe(['serve'])).toBe(true);
    expect(namesServe(['--config', '/c/serve', 'serve', '--log-level', 'debug'])).toBe(true);
    expect(namesServe(['-c', 'x.toml', 'serve'])).toBe(true);
    expect(namesServe(['--config=x.toml', 'serve'])).toBe(true);
    expect(namesServe(['--', 'serve'])).toBe(true);
  });

  it('not another command, nor a config file named serve', () => {
    expect(namesServe([])).toBe(false);
    expect(namesServe(['status'])).toBe(false);
    expect(namesServe(['--config', 'serve', 'status'])).toBe(false);
    expect(namesServe(['-c', 'serve', 'stop'])).toBe(false);
    expect(namesServe(['tasks', '--context', 'serve'])).toBe(false);
    expect(namesServe(['--version'])).toBe(false);
  });
});
