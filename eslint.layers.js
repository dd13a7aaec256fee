// The layering of src/ (docs/architecture.md, "Layers"): a2a/ and cli/ above core/, core/ above
// store/, uplink/ and downlink/; config/ below all of them but uplink/ (whose provider presets it
// reads); the composition root (src/app.ts)
// above everything but cli/. Outside store/, the store is reached through its facade
// (store/store.js) and its state machines only; its other modules may be imported for types.
// Used by eslint.config.js and, on its own and without type information (a few seconds), by
// `npm run lint:layers`, which `npm test` runs.
import tseslint from 'typescript-eslint';

const WHY = 'layering: see docs/architecture.md, "Layers"';

/** Imports (relative, from a file one folder below src/) of these folders or top-level modules. */
const folders = (...names) => names.map((f) => ({ regex: `^\\.\\./${f}(/|\\.js$)`, message: WHY }));

/** Value imports of store/ modules other than the facade and the two state machines. */
const storeInternals = {
  regex: '^\\.\\./store/(?!store\\.js$|task-state\\.js$|dispatch-state\\.js$)',
  allowTypeImports: true,
  message: `${WHY}: use the store through store/store.js (reads on the store, writes inside store.tx)`,
};

const rule = (files, ...patterns) => ({
  files,
  plugins: { '@typescript-eslint': tseslint.plugin },
  rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
});

export const layers = [
  rule(['src/core/**/*.ts'], ...folders('a2a', 'cli', 'demo', 'app'), storeInternals),
  rule(['src/store/**/*.ts', 'src/uplink/**/*.ts', 'src/downlink/**/*.ts'], ...folders('core', 'a2a', 'cli', 'demo', 'app')),
  rule(['src/config/**/*.ts'], ...folders('core', 'a2a', 'cli', 'demo', 'app', 'store', 'downlink')),
  rule(['src/a2a/**/*.ts'], ...folders('cli', 'demo', 'app', 'store', 'uplink', 'downlink')),
  rule(['src/cli/**/*.ts', 'src/demo/**/*.ts'], storeInternals),
  rule(['src/app.ts'], { regex: '^\\./store/(?!store\\.js$)', allowTypeImports: true, message: WHY }),
];
