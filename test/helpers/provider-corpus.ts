/**
 * The provider corpus of issue 13 as the tests read it (written by
 * test/fixtures/generate-provider-corpus.ts): its manifest, its messages, the profile each
 * preset builds, and a store model holding the live task the replies answer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { profileOf, type ProviderProfile } from '../../src/uplink/border.js';
import type { ProviderName } from '../../src/uplink/providers.js';
import type { ProviderCorpusManifest } from '../fixtures/generate-provider-corpus.js';
import { FIXTURES_DIR, loadManifest } from './corpus.js';
import { storeModel, type StoreModel } from './gate-stack.js';

export const PROVIDER_CORPUS_DIR = join(FIXTURES_DIR, 'providers');

export function loadProviderManifest(): ProviderCorpusManifest {
  return JSON.parse(readFileSync(join(PROVIDER_CORPUS_DIR, 'manifest.json'), 'utf8')) as ProviderCorpusManifest;
}

export function readProviderMessage(file: string): Buffer {
  return readFileSync(join(PROVIDER_CORPUS_DIR, file));
}

/** The profile `loadConfig` builds for `mailbox.provider = <name>` (self-hosted: with the manifest's patterns). */
export function providerProfile(m: ProviderCorpusManifest, name: ProviderName): ProviderProfile {
  if (name !== 'self-hosted') return profileOf(name);
  const anchored = (p: string): RegExp => new RegExp(`^(?:${p})$`, 'i');
  return profileOf(name, { authservId: anchored(m.selfHosted.authservId), borderHost: anchored(m.selfHosted.borderHost) });
}

/** A fresh store model with the live task (the attack corpus's, which the provider corpus answers). */
export function providerStore(): StoreModel {
  return storeModel(loadManifest());
}
