import { describe, expect, it } from 'vitest';
import { parseCount, parseDays, parseStates, parseTime, parseVerdict } from '../../../src/cli/args.js';
import { UsageError } from '../../../src/cli/errors.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');

describe('CLI option values', () => {
  it('--since/--until: ISO dates and times (no zone = UTC) and ages', () => {
    expect(parseTime('2026-05-01', NOW, '--since')).toBe(Date.parse('2026-05-01T00:00:00Z'));
    expect(parseTime('2026-05-01T10:00:00Z', NOW, '--since')).toBe(Date.parse('2026-05-01T10:00:00Z'));
    expect(parseTime('2026-05-01T10:00', NOW, '--since')).toBe(Date.parse('2026-05-01T10:00:00Z'));
    expect(parseTime('2026-05-01T12:00:00+02:00', NOW, '--since')).toBe(Date.parse('2026-05-01T10:00:00Z'));
    expect(parseTime('90s', NOW, '--since')).toBe(NOW - 90_000);
    expect(parseTime('30m', NOW, '--since')).toBe(NOW - 30 * 60_000);
    expect(parseTime('2h', NOW, '--since')).toBe(NOW - 2 * 3_600_000);
    expect(parseTime('7d', NOW, '--since')).toBe(NOW - 7 * 86_400_000);
    expect(parseTime('1.5d', NOW, '--since')).toBe(NOW - 1.5 * 86_400_000);
    for (const bad of ['yesterday', '2h ago', '7', '2026-13-45', '']) expect(() => parseTime(bad, NOW, '--since')).toThrow(UsageError);
    expect(() => parseTime('soon', NOW, '--until')).toThrow(/--until "soon": give an ISO date/);
  });

  it('--limit and --older-than', () => {
    expect(parseCount('25', '--limit')).toBe(25);
    for (const bad of ['0', '-1', '1.5', 'ten', '']) expect(() => parseCount(bad, '--limit')).toThrow(UsageError);
    // The unit the option takes is named, so a value typed with another is told which.
    expect(() => parseCount('5s', '--reply-delay', 0, 600_000, 'milliseconds')).toThrow(new UsageError('--reply-delay takes a whole number of milliseconds, 0 to 600000; got "5s"'));
    expect(() => parseCount('x', '--before', 1, 9)).toThrow(new UsageError('--before takes a whole number, 1 to 9; got "x"'));
    expect(parseDays('30', '--older-than')).toBe(30 * 86_400_000);
    expect(parseDays('0.5', '--older-than')).toBe(43_200_000);
    expect(parseDays('0', '--older-than')).toBe(0);
    // The ages --since takes, as tasks and ledger do; a bare number stays days.
    expect(parseDays('3d', '--older-than')).toBe(3 * 86_400_000);
    expect(parseDays('12h', '--older-than')).toBe(43_200_000);
    expect(parseDays('2w', '--older-than')).toBe(14 * 86_400_000);
    expect(parseDays('90m', '--older-than')).toBe(5_400_000);
    for (const bad of ['-3', '3x', 'x', '', '3 days']) expect(() => parseDays(bad, '--older-than')).toThrow(/give a number of days \(30, 0\.5\) or an age \(12h, 7d, 2w\)/);
  });

  it('--state takes every spelling a caller sees, lists, and the groups open/finished', () => {
    expect(parseStates('working', '--state')).toEqual(['WORKING']);
    expect(parseStates('TASK_STATE_INPUT_REQUIRED', '--state')).toEqual(['INPUT_REQUIRED']);
    expect(parseStates('input-required,completed', '--state')).toEqual(['INPUT_REQUIRED', 'COMPLETED']);
    expect(parseStates('open', '--state')).toEqual(['SUBMITTED', 'WORKING', 'INPUT_REQUIRED']);
    expect(parseStates('finished', '--state').sort()).toEqual(['CANCELED', 'COMPLETED', 'FAILED', 'REJECTED']);
    expect(() => parseStates('done', '--state')).toThrow(/"done" is not a task state; use one of submitted, working, input-required.*; did you mean "completed"\?$/);
    // A typo gets the nearest state, as a config value gets its nearest choice.
    expect(() => parseStates('cancelled', '--state')).toThrow(/; did you mean "canceled"\?$/);
    expect(() => parseStates('complted', '--state')).toThrow(/; did you mean "completed"\?$/);
    expect(() => parseStates('constructor', '--state')).toThrow(/\(comma-separated for several\)$/);
  });

  it('--verdict: exact verdicts, or prefixes that some verdict starts with', () => {
    expect(parseVerdict('bad-token', '--verdict')).toBe('bad-token');
    expect(parseVerdict('auth:', '--verdict')).toBe('auth:');
    expect(parseVerdict('applied*', '--verdict')).toBe('applied*');
    expect(() => parseVerdict('auth', '--verdict')).toThrow(/matches no verdict/);
    expect(() => parseVerdict('nope:', '--verdict')).toThrow(UsageError);
    expect(() => parseVerdict(':', '--verdict')).toThrow(UsageError);
  });
});
