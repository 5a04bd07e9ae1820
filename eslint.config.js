import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * The layering (docs/architecture.md): functions → runtime → use-cases → ports → core; adapters → ports → core; sql
 * and config → core. Use-cases never see an adapter: the composition roots in lib/runtime give them ports. A folder
 * of lib/ imports itself and what LAYERS lists (types included); nothing in lib/ imports the folders outside it.
 * Outside lib/, IMPORTERS lists what each entry point may reach. Checked on the import text, static and dynamic
 * (`import()`), so folder names stay unique across layers.
 */
const LAYERS = {
  core: [],
  sql: ['core'],
  config: ['core'],
  ports: ['core'],
  adapters: ['ports', 'core', 'sql', 'config'],
  'use-cases': ['ports', 'core', 'sql', 'config'],
  runtime: ['use-cases', 'adapters', 'ports', 'core', 'sql', 'config'],
}
const OUTSIDE_LIB = ['functions', 'infra', 'bench', 'scripts', 'examples', 'test', 'bin']

/** A pattern for no-restricted-imports and restrictedDynamicImports: import paths into one of `dirs`. */
const importing = (dirs, message, prefix = '(lib/)?') => ({
  regex: `^(\\.\\./)+${prefix}(${dirs.join('|')})(/|$)`,
  message,
})

const LAYERING_SUMMARY =
  'the layering is functions → runtime → use-cases → ports → core, adapters → ports → core, and sql and config → core'

const libPatterns = Object.fromEntries(
  Object.entries(LAYERS).map(([layer, allowed]) => {
    const forbidden = Object.keys(LAYERS).filter((other) => other !== layer && !allowed.includes(other))
    const allowedList = [layer, ...allowed].map((l) => `lib/${l}`).join(', ')
    return [
      `lib/${layer}`,
      [
        ...(forbidden.length
          ? [importing(forbidden, `lib/${layer} may import only ${allowedList} (${LAYERING_SUMMARY})`)]
          : []),
        importing(OUTSIDE_LIB, `lib/ does not import ${OUTSIDE_LIB.map((d) => `${d}/`).join(', ')}`),
      ],
    ]
  }),
)

/**
 * The entry points outside lib/: the Lambda handlers and the CLI reach lib/ through its composition roots and
 * use-cases, never an adapter or SQL; the CDK app reads the config and the runtime's contracts (the Lambdas'
 * environment, the allocators' settings), never the code it deploys; the CLI's launcher starts the CLI and reads the
 * allocators' settings, nothing else.
 */
const IMPORTERS = {
  functions: [
    importing(
      ['adapters', 'sql'],
      'functions/ reaches lib/ through lib/runtime and lib/use-cases (and lib/config, lib/core, lib/ports), never an adapter or SQL',
      'lib/',
    ),
    importing(
      ['infra', 'bench', 'scripts', 'examples', 'test', 'bin'],
      'functions/ imports only functions/ and lib/',
      '',
    ),
  ],
  infra: [
    importing(
      ['adapters', 'sql', 'use-cases', 'ports'],
      'infra/ imports lib/config, lib/core and lib/runtime (the contracts of what it deploys), never the code it deploys',
      'lib/',
    ),
    importing(
      ['functions', 'bench', 'scripts', 'examples', 'test', 'bin'],
      "infra/ imports only infra/ and lib/ (functions/ is bundled by path, bin/ is the CLI's launcher)",
      '',
    ),
  ],
  bin: [
    {
      regex: '^\\.\\./(?!lib/runtime/[a-z-]+\\.mjs$|functions/local/cli\\.ts$)',
      message:
        "bin/ imports only bin/, lib/runtime's .mjs contracts and the CLI's entry functions/local/cli.ts",
    },
  ],
}

/** no-restricted-imports' patterns, applied to `import()` with a literal path; a computed path cannot be checked. */
const restrictedDynamicImports = {
  meta: { type: 'problem', schema: [{ type: 'object' }] },
  create(context) {
    const patterns = (context.options[0]?.patterns ?? []).map((p) => ({ ...p, re: new RegExp(p.regex) }))
    return {
      ImportExpression(node) {
        const source = node.source
        const path =
          source.type === 'Literal' && typeof source.value === 'string'
            ? source.value
            : source.type === 'TemplateLiteral' && source.expressions.length === 0
              ? source.quasis[0].value.cooked
              : undefined
        if (path === undefined) {
          if (!context.options[0]?.allowComputed)
            context.report({ node, message: 'import() of a computed path: the layering cannot check it' })
          return
        }
        const hit = patterns.find((p) => p.re.test(path))
        if (hit)
          context.report({
            node,
            message: `'${path}' import is restricted from being used by a pattern. ${hit.message}`,
          })
      },
    }
  },
}

/** `dynamicOnly`: patterns for `import()` alone (a static import of the same module is checked elsewhere). */
const importRules = (files, patterns, { allowComputed = false, dynamicOnly = [] } = {}) => ({
  files,
  plugins: { dimsync: { rules: { 'restricted-dynamic-imports': restrictedDynamicImports } } },
  rules: {
    'no-restricted-imports': ['error', { patterns }],
    'dimsync/restricted-dynamic-imports': [
      'error',
      { patterns: [...patterns, ...dynamicOnly], allowComputed },
    ],
  },
})

/** DuckDB is opened in one place, with one set of session settings (lib/adapters/duckdb/duckdb-engine.ts). */
const DUCKDB_ENGINE = 'lib/adapters/duckdb/duckdb-engine.ts'
const OPEN_DUCKDB_MESSAGE = `open DuckDB with openDuckDbEngine (${DUCKDB_ENGINE}), which every place shares`
const oneDuckDbEngine = {
  files: ['lib/**/*.ts'],
  ignores: [DUCKDB_ENGINE],
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: [
          {
            name: '@duckdb/node-api',
            importNames: ['DuckDBInstance', 'DuckDBInstanceCache'],
            allowTypeImports: true,
            message: OPEN_DUCKDB_MESSAGE,
          },
        ],
      },
    ],
  },
}

const layering = [
  ...Object.entries(libPatterns).map(([folder, patterns]) =>
    importRules([`${folder}/**/*.ts`], patterns, {
      dynamicOnly: [{ regex: '^@duckdb/node-api$', message: OPEN_DUCKDB_MESSAGE }],
    }),
  ),
  oneDuckDbEngine,
  importRules(['functions/**/*.ts'], IMPORTERS.functions),
  importRules(['infra/**/*.ts', 'infra/**/*.mjs'], IMPORTERS.infra),
  // The launcher imports the compiled CLI from its cache by path (bin/compile-cache.mjs).
  importRules(['bin/**/*.mjs'], IMPORTERS.bin, { allowComputed: true }),
  // The engine factory itself loads DuckDB's module on first use.
  {
    files: [DUCKDB_ENGINE],
    rules: { 'dimsync/restricted-dynamic-imports': ['error', { patterns: libPatterns['lib/adapters'] }] },
  },
]

/** The tests' own selector of no-restricted-syntax (a file's later setting of a rule replaces the earlier one). */
const FOCUSED_TESTS = {
  selector:
    'CallExpression[callee.object.name=/^(it|test|describe)$/][callee.property.name=/^(only|skip|todo)$/]',
  message: 'focused, skipped or todo tests hide behaviour',
}

/**
 * The use-cases never ask which warehouse they talk to (docs/architecture.md): they plan a batch's work once and
 * the warehouse applies it (`Warehouse.applyWork`, `applyInTransaction`, `runAlone`); what a warehouse can do
 * decides only in lib/sql and the adapters.
 */
const ASKS_WAREHOUSE = 'lib/use-cases never ask which warehouse they talk to'
const warehouseQuestions = [
  {
    selector: 'ImportSpecifier[imported.name=/^(isScriptWarehouse|ScriptWarehouse)$/]',
    message: `${ASKS_WAREHOUSE}: hand the work to the warehouse (Warehouse.applyWork), which applies it its own way`,
  },
  {
    selector: 'MemberExpression[property.name=/^(capabilities|mergeMode)$/]',
    message: `${ASKS_WAREHOUSE}: a capability decides in lib/sql or the adapter (runAlone, applyInTransaction, applyWork), not in a use-case`,
  },
  {
    selector: 'ObjectPattern > Property[key.name=/^(capabilities|mergeMode)$/]',
    message: `${ASKS_WAREHOUSE}: a capability decides in lib/sql or the adapter (runAlone, applyInTransaction, applyWork), not in a use-case`,
  },
  {
    selector: 'BinaryExpression > MemberExpression[property.name="name"][object.property.name="dialect"]',
    message: `${ASKS_WAREHOUSE}: a dialect's name is for messages; a hook or a capability states the difference`,
  },
]
const WAREHOUSE_TYPE = {
  selector:
    'MemberExpression[property.name="type"]:matches([object.name="warehouse"], [object.property.name="warehouse"])',
  message: `${ASKS_WAREHOUSE}: \`warehouse.type\` is the composition roots' choice (lib/runtime)`,
}
const useCaseRules = [
  {
    files: ['lib/use-cases/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', FOCUSED_TESTS, ...warehouseQuestions, WAREHOUSE_TYPE] },
  },
  // The report prints the warehouse's type as a label (it branches on nothing); every other question is refused.
  {
    files: ['lib/use-cases/read-report.ts'],
    rules: { 'no-restricted-syntax': ['error', FOCUSED_TESTS, ...warehouseQuestions] },
  },
]

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.dimsync/', 'bench/tmp/', 'dist/'] },
  js.configs.recommended,
  // Plain JavaScript files (bin/, infra bundling scripts) run on Node.
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', FOCUSED_TESTS],
    },
  },
  // Tests replay: a failing property-test seed or run must fail again the same way.
  {
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'Math',
          property: 'random',
          message:
            'tests are deterministic: use fast-check arbitraries (fc.shuffledSubarray, fc.nat) or a counter',
        },
      ],
    },
  },
  ...layering,
  ...useCaseRules,
)
