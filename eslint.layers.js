// The layering of src/ (docs/architecture.md, "Layers"): a2a/ and cli/ above core/, core/ above
// store/, uplink/ and downlink/; config/ below all of them. Each rule names what a folder may
// not import. Used by eslint.config.js and, on its own and without type information (so it takes
// a second), by `npm run lint:layers`, which `npm test` runs.

/** Import paths (relative, from a file one folder below src/) of the folders above `layer`. */
const up = (...folders) => folders.map((f) => ({ regex: `^\\.\\./${f}(/|\\.js$)`, message: `layering: see docs/architecture.md, "Layers"` }));

const rule = (files, ...folders) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: up(...folders) }] },
});

export const layers = [
  rule(['src/core/**/*.ts'], 'a2a', 'cli', 'demo', 'app'),
  rule(['src/store/**/*.ts', 'src/uplink/**/*.ts', 'src/downlink/**/*.ts'], 'core', 'a2a', 'cli', 'demo', 'app'),
  rule(['src/config/**/*.ts'], 'core', 'a2a', 'cli', 'demo', 'app', 'store', 'uplink', 'downlink'),
  rule(['src/a2a/**/*.ts'], 'cli', 'demo', 'app'),
];
