import Database from 'better-sqlite3';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log.js';
import { WAL_LIMIT_BYTES } from '../../../src/store/wal.js';
import { makeConfigDir, minimalToml } from '../../helpers/config-dir.js';

/** The bridge keeps its store's WAL bounded: a minute (on its clock) after a pinned reader lets go, the WAL is truncated. */
const dir = makeConfigDir(minimalToml());
let app: App | undefined;
afterAll(async () => {
  await app?.close();
  rmSync(dir.dir, { recursive: true, force: true });
});

describe('the store WAL under a pinned reader', () => {
  it('is truncated by the refresh a minute after the reader lets go', async () => {
    const config = loadConfig(dir.configPath);
    mkdirSync(join(config.mailbox.maildirPath!, 'new'), { recursive: true });
    let offset = 0;
    app = await startApp(config, { log: createLogger('silent'), now: () => Date.now() + offset });
    await app.bridge.idle();
    const db = app.bridge.ctx.store;
    const reader = new Database(config.store.path, { readonly: true });
    reader.prepare('BEGIN').run();
    reader.prepare('SELECT count(*) FROM ledger').get(); // like a `sqlite3` shell left open
    const raw = Buffer.alloc(100 * 1024, 0x61);
    for (let i = 0; i < 300; i++) {
      db.tx((tx) => tx.ledger.record({ source: `t:${i}`, seenAt: i, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: raw.length, rawSha256: `s${i}`, raw, agent: null, taskId: null, verdict: 'no-task-id', reason: 'test' }));
    }
    expect(db.walBytes()).toBeGreaterThan(25 * 1024 * 1024);
    offset += 61_000;
    await app.bridge.refresh(); // the reader still holds its snapshot: nothing to do, nothing waited for
    expect(db.walBytes()).toBeGreaterThan(25 * 1024 * 1024);
    reader.prepare('COMMIT').run();
    reader.close();
    await app.bridge.refresh(); // within the minute: not yet
    expect(db.walBytes()).toBeGreaterThan(25 * 1024 * 1024);
    offset += 61_000;
    await app.bridge.refresh();
    expect(db.walBytes()).toBeLessThanOrEqual(WAL_LIMIT_BYTES);
  });
});
