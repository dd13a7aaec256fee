// `npm run lint:layers`: only the layering rules (eslint.layers.js), parsed without type information.
import tseslint from 'typescript-eslint';
import { layers } from './eslint.layers.js';

export default [
  { files: ['src/**/*.ts'], languageOptions: { parser: tseslint.parser }, linterOptions: { reportUnusedDisableDirectives: 'off' } },
  ...layers,
];
