// The import rules of src/ (docs/architecture.md), checked by `npm test`
// (test/unit/foundation/dependencies.test.ts runs `depcruise` with this file).
//
// - No import cycle, type-only imports included (tsPreCompilationDeps), in src/ and web/src/.
// - An area is a folder directly under src/ (src/delivery, src/sso, ...). Its index.ts is its only
//   public surface: code outside the area imports that file and nothing else of it. Tests may
//   reach inside (they are not cruised). src/lib/ is the exception: a toolbox of small independent
//   modules (logger, metrics, tokens, ...), each imported on its own, so loading one does not load
//   all (metrics registers its collectors on import).
// - Areas are layered, and imports go one way, from the leaves up (LAYERS below): a module may
//   import its own layer or lower ones, never a higher one.
// - Areas of one layer listed in SIBLINGS do not import each other.
// - The SAML validation core (src/sso/saml/core/) stays pure: no HTTP, no database.
// - src/client/ (the browser client) imports nothing else of src/; web/src/ and src/ do not import
//   each other.
// - bench/ is cruised too: it reaches an area only through its index.ts (src/lib/ modules one by
//   one), like the top-level files of src/.

/** From the leaves up. A name is a folder under src/ (an area) or a file directly in src/. */
const LAYERS = [
  ['lib', 'outbound', 'kafka', 'db', 'stack', 'config.ts', 'errors.ts'],
  ['context.ts', 'create-context.ts'],
  ['projects', 'outbox'],
  ['http'],
  ['email'],
  ['delivery'],
  ['management', 'sso', 'admin'],
  ['routes.ts'],
  ['main.ts'],
];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const pathOf = (name) => (name.endsWith('.ts') ? `^src/${escape(name)}$` : `^src/${escape(name)}/`);

const layerRules = LAYERS.flatMap((layer, i) => {
  const higher = LAYERS.slice(i + 1).flat();
  if (higher.length === 0) return [];
  return [
    {
      name: `layer-${i}-imports-upward`,
      comment: `${layer.join(', ')} may only import from layers at or below its own (see LAYERS in .dependency-cruiser.cjs)`,
      severity: 'error',
      from: { path: layer.map(pathOf) },
      to: { path: higher.map(pathOf) },
    },
  ];
});

/** Areas that share a layer but are independent of each other: neither imports the other. */
const SIBLINGS = [
  ['projects', 'outbox'],
  ['management', 'sso', 'admin'],
];

const siblingRules = SIBLINGS.flatMap((group) =>
  group.map((area) => ({
    name: `sibling-${area}`,
    comment: `${area} is independent of ${group.filter((a) => a !== area).join(' and ')}: move what both need down a layer`,
    severity: 'error',
    from: { path: pathOf(area) },
    to: { path: group.filter((a) => a !== area).map(pathOf) },
  })),
);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle (type-only imports count): break it by moving the shared piece down a layer.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'area-internals',
      comment: "Another area's internals: import that area's index.ts (its public surface) instead.",
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/[^/]+/', pathNot: ['^src/$1/', '^src/[^/]+/index\\.ts$', '^src/lib/'] },
    },
    {
      name: 'bench-into-area-internals',
      comment: "The benchmark (bench/) uses the service like any other module outside an area: an area through its index.ts, src/lib/ modules one by one.",
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^src/[^/]+/', pathNot: ['^src/[^/]+/index\\.ts$', '^src/lib/'] },
    },
    {
      name: 'root-into-area-internals',
      comment: "A top-level file (main.ts, create-context.ts, routes.ts, ...) imports an area's index.ts, never its internals.",
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: '^src/[^/]+/', pathNot: ['^src/[^/]+/index\\.ts$', '^src/lib/'] },
    },
    {
      name: 'saml-core-pure',
      comment: 'The SAML validation core (src/sso/saml/core/) is protocol logic only: no HTTP, no database, nothing else of the service.',
      severity: 'error',
      from: { path: '^src/sso/saml/core/' },
      to: { path: ['^src/(?!sso/saml/core/)', '(^|/)node_modules/(fastify|@fastify/[^/]+|pg|pg-[^/]+|kafkajs|undici)/'] },
    },
    {
      name: 'client-standalone',
      comment: "src/client/ is the project's browser client: it ships without the service, so it imports nothing of it.",
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/(?!client/)' },
    },
    {
      name: 'web-apart',
      comment: 'The dashboard (web/src/) talks to the service over HTTP only; it imports nothing of src/.',
      severity: 'error',
      from: { path: '^web/src/' },
      to: { path: '^src/' },
    },
    {
      name: 'service-apart-from-web',
      comment: 'The service does not import the dashboard (web/src/); it serves its build (web/dist/).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^web/' },
    },
    ...layerRules,
    ...siblingRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^web/dist', '\\.d\\.ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs'] },
  },
};
