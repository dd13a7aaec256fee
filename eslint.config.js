// ESLint with typescript-eslint's type-checked rules over the whole tree (src, test, bench,
// scripts). Run by `npm run lint`, which `npm test` runs first. A rule is turned off only here,
// with the reason; a local disable names its reason on the same line.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layers } from './eslint.layers.js';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.node/', 'coverage/', 'tmp/', 'test/fixtures/corpus/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Destructuring a member away so that the rest omits it (`const { raw: _raw, ...rest } = row`)
      // is how this code drops a field; the named member is unused on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
    },
  },
  {
    // One concept per file, and a file a newcomer can read: none over 400 lines (docs/architecture.md, "Layers").
    files: ['**/*.ts'],
    rules: { 'max-lines': ['error', { max: 400 }] },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Preloaded into a child process with `node -r` (test/fixtures/builtins-at-exit.cjs), or run by
    // a Node too old for anything else (scripts/node-floor.cjs): CommonJS, where require() is how a
    // module loads another.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { process: 'readonly', require: 'readonly', module: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  ...layers,
);
