import { lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliFailure } from '../../../src/cli/errors.js';
import { heldMaildirSources } from '../../../src/cli/prune-held.js';
import { tempFolders } from '../../helpers/temp-folders.js';

const temp = tempFolders('mb-prune-held-');

describe('prune lists the Maildir folders first (src/cli/prune-held.ts)', () => {
  it('holds each file by the source the reader records it under, files sharing a unique name keyed apart', async () => {
    const md = temp.folder(0o700);
    for (const sub of ['new', 'cur', 'tmp']) mkdirSync(join(md, sub));
    writeFileSync(join(md, 'new', '1700000000.a.host'), 'a');
    writeFileSync(join(md, 'cur', '1700000001.b.host:2,S'), 'b');
    writeFileSync(join(md, 'new', '1700000002.c.host:2,'), 'c1');
    writeFileSync(join(md, 'cur', '1700000002.c.host:2,S'), 'c2'); // another file sharing the unique name
    writeFileSync(join(md, 'tmp', '1700000003.d.host'), 'd'); // tmp/ is never mail
    const ino = lstatSync(join(md, 'new', '1700000002.c.host:2,')).ino;
    expect([...(await heldMaildirSources([md]))].sort()).toEqual(
      ['1700000000.a.host', '1700000001.b.host', '1700000002.c.host', `1700000002.c.host/ino${ino}`].map((k) => `maildir:${md}:${k}`).sort(),
    );
  });

  it('a folder with neither new/ nor cur/ holds nothing; one there but not listable stops prune', async () => {
    const gone = join(temp.folder(0o700), 'Maildir');
    expect(await heldMaildirSources([gone])).toEqual(new Set());
    const broken = temp.folder(0o700);
    writeFileSync(join(broken, 'new'), 'not a directory');
    await expect(heldMaildirSources([broken])).rejects.toThrow(CliFailure);
    await expect(heldMaildirSources([broken])).rejects.toThrow(/could not: .*; nothing was pruned$/);
  });
});
