import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

/** The message loadConfig throws for `toml` (the parser's error, through tomlSyntaxMessage). */
function syntaxError(toml: string): string {
  const c = makeConfigDir(toml);
  try {
    loadConfig(c.configPath);
  } catch (err) {
    return (err as Error).message.replace(c.configPath, '<file>');
  } finally {
    rmSync(c.dir, { recursive: true, force: true });
  }
  throw new Error('the config loaded');
}

describe('a TOML syntax error', () => {
  it('at a line holding an unclosed quote asks whether a closing quote is missing (fresh-user trial)', () => {
    // The parser's words for it are about control characters: the line end is one, inside the string.
    expect(syntaxError(minimalToml().replace('kind = "maildir"', 'kind = "maildir'))).toBe(
      'config file: <file> is not valid TOML at line 10, column 16: control characters are not allowed in strings — is a closing quote (") missing?; correct line 10, column 16: kind = "maildir',
    );
    expect(syntaxError("[store]\npath = 'state/bridge.sqlite\n")).toMatch(/^config file: <file> is not valid TOML at line 2, column \d+: .* — is a closing quote \('\) missing\?; correct line 2/);
    expect(syntaxError('[server]\npoll_words = ["status", "poll]\n')).toMatch(/ — is a closing quote \("\) missing\?; correct line 2/);
    // A multi-line string opened and never closed.
    expect(syntaxError('[server]\nname = """bridge\nx = 1\n')).toMatch(/ — is a closing quote \("""\) missing\?; correct line 2/);
  });

  it('says nothing of quotes where every string on the line is closed', () => {
    // A control character inside a closed string; quotes in a comment and escaped quotes do not open strings.
    const bell = syntaxError('[server]\nname = "a\u0007b" # it\'s "quoted\n');
    expect(bell).toMatch(/^config file: <file> is not valid TOML at line 2, column \d+: control characters are not allowed in strings; correct line 2/);
    expect(bell).not.toContain('closing quote');
    expect(syntaxError('[server]\nname = "say \\"hi\\"" # "\nlisten = = 1\n')).not.toContain('closing quote');
    // A multi-line string that closes on a later line leaves the lines after it alone.
    expect(syntaxError('[server]\nname = """a\n"b" \'c\n"""\nlisten = = 1\n')).not.toContain('closing quote');
    expect(syntaxError('[server\n')).not.toContain('closing quote');
  });
});
