import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * The layering of lib/ (docs/architecture.md): functions → runtime → use-cases → adapters → ports → core, and sql and
 * config → core. A folder of lib/ imports itself and what this table lists (types included); nothing in lib/
 * imports the folders outside it. Checked on the import text, so folder names stay unique across layers.
 */
const LAYERS = {
  core: [],
  sql: ['core'],
  config: ['core'],
  ports: ['core'],
  adapters: ['ports', 'core', 'sql', 'config'],
  'use-cases': ['adapters', 'ports', 'core', 'sql', 'config'],
  runtime: ['use-cases', 'adapters', 'ports', 'core', 'sql', 'config'],
}
const OUTSIDE_LIB = ['functions', 'infra', 'bench', 'scripts', 'examples', 'test']

const layering = Object.entries(LAYERS).map(([layer, allowed]) => {
  const forbidden = Object.keys(LAYERS).filter((other) => other !== layer && !allowed.includes(other))
  const importing = (dirs, message) => ({ regex: `^(\\.\\./)+(lib/)?(${dirs.join('|')})(/|$)`, message })
  const allowedList = [layer, ...allowed].map((l) => `lib/${l}`).join(', ')
  return {
    files: [`lib/${layer}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...(forbidden.length
              ? [
                  importing(
                    forbidden,
                    `lib/${layer} may import only ${allowedList} (the layering is functions → runtime → ` +
                      'use-cases → adapters → ports → core, and sql and config → core)',
                  ),
                ]
              : []),
            importing(OUTSIDE_LIB, `lib/ does not import ${OUTSIDE_LIB.map((d) => `${d}/`).join(', ')}`),
          ],
        },
      ],
    },
  }
})

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
      'no-restricted-syntax': [
        'error',
        {
          selector:
            'CallExpression[callee.object.name=/^(it|test|describe)$/][callee.property.name=/^(only|skip|todo)$/]',
          message: 'focused, skipped or todo tests hide behaviour',
        },
      ],
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
)
