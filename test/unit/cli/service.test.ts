import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultKind, loadCommand, privateFolderConflicts, privateFolderMessage, renderPlist, renderUnit, serviceTarget, type ServicePaths } from '../../../src/cli/service.js';
import { UsageError } from '../../../src/cli/errors.js';
import { checkPlist } from '../../helpers/plist.js';

const AT = Date.parse('2026-06-01T12:00:00Z');
const PATHS: ServicePaths = {
  node: '/usr/local/bin/node',
  installDir: '/opt/a2a-mailbridge',
  config: '/Users/me/.config/a2a-mailbridge/config.toml',
  stateDir: '/Users/me/.config/a2a-mailbridge/state',
};
const plistTemplate = readFileSync('launchd/com.a2a-mailbridge.plist', 'utf8');
const unitTemplate = readFileSync('launchd/a2a-mailbridge.service', 'utf8');

describe('the plist checker used by the tests', () => {
  it('accepts the template as it ships', () => {
    expect(checkPlist(plistTemplate).errors).toEqual([]);
  });

  it.each([
    ['an unclosed element', '<dict><key>a</key><string>x</string>'],
    ['a key without value', '<dict><key>a</key></dict>'],
    ['a value without key', '<dict><string>x</string></dict>'],
    ['an unknown element', '<dict><key>a</key><str>x</str></dict>'],
    ['a bare ampersand', '<dict><key>a</key><string>x & y</string></dict>'],
    ['a bad integer', '<dict><key>a</key><integer>0o77</integer></dict>'],
    ['text in a dict', '<dict>oops<key>a</key><true/></dict>'],
    ['a repeated key', '<dict><key>a</key><true/><key>a</key><false/></dict>'],
    ['content in true', '<dict><key>a</key><true>yes</true></dict>'],
    ['two objects in plist', '<dict></dict><array></array>'],
  ])('rejects %s', (_, body) => {
    const doc = `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">${body}</plist>\n`;
    expect(checkPlist(doc).errors).not.toEqual([]);
  });

  it('rejects a missing DOCTYPE or another root', () => {
    expect(checkPlist('<?xml version="1.0"?>\n<plist version="1.0"><true/></plist>').errors.join()).toMatch(/DOCTYPE/);
    expect(checkPlist('<?xml version="1.0"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<dict/>').errors.join()).toMatch(/not <plist>/);
  });
});

describe('service install: the LaunchAgent plist', () => {
  it('replaces every placeholder with an absolute path and follows the plist DTD', () => {
    const xml = renderPlist(plistTemplate, PATHS, AT);
    expect(xml).not.toMatch(/@[A-Z_]+@/);
    const { errors, value } = checkPlist(xml);
    expect(errors).toEqual([]);
    expect(value).toMatchObject({
      Label: 'com.a2a-mailbridge',
      ProgramArguments: ['/usr/local/bin/node', '--max-semi-space-size=4', '--invocation-count-for-maglev=10000', '--invocation-count-for-turbofan=30000', '/opt/a2a-mailbridge/dist/cli/main.js', '--config', PATHS.config, 'serve'],
      EnvironmentVariables: { NODE_COMPILE_CACHE: `${PATHS.stateDir}/node-compile-cache` },
      WorkingDirectory: PATHS.stateDir,
      RunAtLoad: true,
      KeepAlive: true,
      ThrottleInterval: 10,
      Umask: 63, // decimal for 0077
      StandardErrorPath: `${PATHS.stateDir}/launchd.err.log`,
    });
    expect(xml).toContain('<!-- Written by a2a-mailbridge service install at 2026-06-01T12:00:00Z');
    expect(xml).not.toContain('replace each');
  });

  it('escapes XML in paths', () => {
    const xml = renderPlist(plistTemplate, { ...PATHS, config: '/Users/R&D <x>/Library/Application Support/mb.toml' }, AT);
    const { errors, value } = checkPlist(xml);
    expect(errors).toEqual([]);
    const args = (value as { ProgramArguments: string[] }).ProgramArguments;
    expect(args[args.indexOf('--config') + 1]).toBe('/Users/R&D <x>/Library/Application Support/mb.toml');
  });

  it('refuses a relative path', () => {
    expect(() => renderPlist(plistTemplate, { ...PATHS, config: 'config.toml' }, AT)).toThrow(UsageError);
  });
});

describe('service install: the systemd user unit', () => {
  it('is hardened, writes only to the state folder, restarts on failure', () => {
    const unit = renderUnit(unitTemplate, PATHS, AT);
    expect(unit).not.toMatch(/@[A-Z_]+@/);
    expect(unit.split('\n')[0]).toBe('# Written by a2a-mailbridge service install at 2026-06-01T12:00:00Z from launchd/a2a-mailbridge.service.');
    const settings = new Map(unit.split('\n').filter((l) => /^\w+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(Object.fromEntries(settings)).toMatchObject({
      ExecStart: `/usr/local/bin/node --max-semi-space-size=4 --invocation-count-for-maglev=10000 --invocation-count-for-turbofan=30000 /opt/a2a-mailbridge/dist/cli/main.js --config ${PATHS.config} serve`,
      Environment: `NODE_COMPILE_CACHE=${PATHS.stateDir}/node-compile-cache`,
      WorkingDirectory: PATHS.stateDir,
      Restart: 'on-failure',
      UMask: '0077',
      NoNewPrivileges: 'yes',
      ProtectSystem: 'strict',
      ProtectHome: 'read-only',
      ReadWritePaths: PATHS.stateDir,
      PrivateTmp: 'yes',
      RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
      WantedBy: 'default.target',
    });
    expect(settings.has('MemoryDenyWriteExecute')).toBe(false); // V8's JIT needs it off
  });

  it('doubles % (a specifier) and refuses paths it cannot write safely', () => {
    expect(renderUnit(unitTemplate, { ...PATHS, stateDir: '/srv/100%/state' }, AT)).toContain('ReadWritePaths=/srv/100%%/state');
    for (const bad of ['/home/me/my state', '/home/me/$HOME', '/home/me/"q"', '/home/me/back\\slash']) {
      expect(() => renderUnit(unitTemplate, { ...PATHS, stateDir: bad }, AT)).toThrow(UsageError);
    }
  });
});

describe('service install: where and how', () => {
  it('launchd on macOS, systemd elsewhere; the file goes where each manager looks', () => {
    expect(defaultKind('darwin')).toBe('launchd');
    expect(defaultKind('linux')).toBe('systemd');
    expect(serviceTarget('launchd', {}, '/Users/me')).toBe('/Users/me/Library/LaunchAgents/com.a2a-mailbridge.plist');
    expect(serviceTarget('systemd', {}, '/home/me')).toBe('/home/me/.config/systemd/user/a2a-mailbridge.service');
    expect(serviceTarget('systemd', { XDG_CONFIG_HOME: '/cfg' }, '/home/me')).toBe('/cfg/systemd/user/a2a-mailbridge.service');
    expect(loadCommand('launchd', '/Users/me/Library/LaunchAgents/com.a2a-mailbridge.plist', 501)).toBe(
      'launchctl bootstrap gui/501 /Users/me/Library/LaunchAgents/com.a2a-mailbridge.plist',
    );
    expect(loadCommand('systemd', 'x')).toBe('systemctl --user daemon-reload && systemctl --user enable --now a2a-mailbridge.service');
  });
});

describe('paths a hardened systemd unit can never see', () => {
  it('finds what lies under /tmp, /var/tmp or /dev/shm, and names each path and what it is', () => {
    const needed = [
      { what: 'the config', path: '/tmp/mb/config.toml' },
      { what: "store.path's folder", path: '/var/tmp/state' },
      { what: 'mailbox.maildir.path', path: '/dev/shm/Maildir' },
      { what: 'the install', path: '/home/me/a2a-mailbridge' },
      { what: 'a look-alike', path: '/tmpfoo/x' },
      { what: 'the folder itself', path: '/tmp' },
    ];
    const found = privateFolderConflicts(needed);
    expect(found.map((f) => f.what)).toEqual(['the config', "store.path's folder", 'mailbox.maildir.path', 'the folder itself']);
    expect(privateFolderMessage(found.slice(0, 1))).toBe(
      'the systemd unit runs with PrivateTmp=yes and PrivateDevices=yes, so it gets empty private /tmp, /var/tmp and /dev/shm and can never see /tmp/mb/config.toml (the config); move it out of those folders (e.g. a2a-mailbridge init --dir ~/.config/a2a-mailbridge, and a checkout under your home)',
    );
    // The template really has both settings the message names.
    expect(unitTemplate).toMatch(/^PrivateTmp=yes$/m);
    expect(unitTemplate).toMatch(/^PrivateDevices=yes$/m);
  });
});
