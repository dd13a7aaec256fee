import { describe, expect, it } from 'vitest';
import { formatStatus, restartCommands, type StatusReport } from '../../../src/cli/status.js';

/**
 * `status` on a bridge that is not this config's (exit 3): /health's store fingerprint is keyed
 * with the bearer, so this config's own bridge, started before its bearer (or store.path) changed,
 * looks like another config's; the line names that cause and the restart (src/cli/status.ts).
 */
const config = '/srv/my cfg/config.toml';
const report = (storeNamed: boolean, why: string): StatusReport => ({
  config,
  bridge: { answering: true, url: 'http://127.0.0.1:8765/health', status: 'ok', version: '0.1.0', sameStore: false, why, storeNamed, olderBearer: null, claimed: true, taken: false, cannotTell: false },
  store: { path: '/srv/my cfg/state/bridge.sqlite', exists: false, bytes: 0 },
  tasks: null,
  mailbox: null,
  failingWebhooks: [],
  dispatchFailuresLast7Days: 0,
  refusedRepliesForOpenTasks: [],
});
const bridgeLine = (r: StatusReport): string => formatStatus(r, 0).split('\n')[1]!;

describe("status of a bridge that is not this config's", () => {
  it('names a bearer changed since the bridge started, and the exact restart, when /health names no store to this bearer', () => {
    const restart = restartCommands(config);
    expect(restart).toMatch(/(^|, or )a2a-mailbridge --config '\/srv\/my cfg\/config.toml' stop, then a2a-mailbridge --config '\/srv\/my cfg\/config.toml' serve$/);
    expect(bridgeLine(report(false, "its /health names no store to this config's server.bearer"))).toBe(
      "bridge    NOT this config's: the bridge answering at http://127.0.0.1:8765 serves another store than /srv/my cfg/state/bridge.sqlite or has another server.bearer (its /health names no store to this config's server.bearer); " +
        `it was started with another config, or this config's bearer (server.bearer_file) changed since that bridge started — restart it: ${restart}; if it is another config's, stop it (a2a-mailbridge --config <the file it was started with> stop) or give this config another server.listen`,
    );
  });

  it('names a store.path changed instead when the bridge takes the bearer but names another store', () => {
    expect(bridgeLine(report(true, "its /health names store 0123456789abcdef, this config's is fedcba9876543210"))).toContain(
      "(its /health names store 0123456789abcdef, this config's is fedcba9876543210); it was started with another config, or this config's store.path changed since that bridge started — restart it: ",
    );
  });

  it("the restart of the service by platform (launchd on macOS, systemd elsewhere) only when its service file is installed", () => {
    expect(restartCommands('', 'darwin', 501, true)).toBe('launchctl kickstart -k gui/501/com.a2a-mailbridge (the installed service), or a2a-mailbridge stop, then a2a-mailbridge serve');
    expect(restartCommands('', 'linux', 1000, true)).toBe('systemctl --user restart a2a-mailbridge.service (the installed service), or a2a-mailbridge stop, then a2a-mailbridge serve');
    expect(restartCommands('', 'linux', 1000, false)).toBe('a2a-mailbridge stop, then a2a-mailbridge serve');
  });
});
