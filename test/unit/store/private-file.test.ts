import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../../src/store/store.js';
import { tempFolders } from '../../helpers/temp-folders.js';

/** The store holds the agents' answers, task text and reply tokens: a new one is readable by this user only (src/store/db.ts). */
const { folder } = tempFolders('mb-private-');

describe('a new store file', () => {
  it('is created mode 0600, and so are its -wal and -shm, whatever the umask lets through', () => {
    const old = process.umask(0o022);
    try {
      const path = join(folder(0o700), 'state', 'bridge.sqlite');
      const db = Store.open(path);
      try {
        db.tx((tx) => tx.ledger.record({ source: 'test:private', seenAt: 1, messageId: null, fromHeader: null, subject: null, dateHeader: null, size: 1, rawSha256: 'x', raw: Buffer.from('x'), agent: null, taskId: null, verdict: 'no-task-id', reason: 'test' }));
        for (const f of [path, `${path}-wal`, `${path}-shm`]) expect(statSync(f).mode & 0o777, f).toBe(0o600);
      } finally {
        db.close();
      }
    } finally {
      process.umask(old);
    }
  });
});
