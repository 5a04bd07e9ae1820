/**
 * The quickstart (`npm start`): backfills two dated customer snapshots with the real CLI, prints the history,
 * shows the same load with deletes=invalidate, and a point-in-time query. Starts from a clean folder each time.
 */
import { spawnSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const cli = join(here, '..', '..', 'bin', 'dimsync.mjs')
rmSync(join(here, '.dimsync'), { recursive: true, force: true })

function dimsync(...args: string[]): void {
  process.stdout.write(`\n$ dimsync ${args.map((a) => (/[\s*]/.test(a) ? `'${a}'` : a)).join(' ')}\n`)
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd: here,
    stdio: ['ignore', 'inherit', 'pipe'],
    encoding: 'utf8',
  })
  if (result.status !== 0) {
    process.stderr.write(result.stderr)
    process.exit(result.status ?? 1)
  }
}

process.stdout.write(`dimsync quickstart (config: ${relative(process.cwd(), join(here, 'dimsync.yaml'))})\n`)
process.stdout.write(
  'Two snapshots: 2024-01-01 09:00 (Ana South, Bruno North, Carla South) and 2024-03-10 14:30 (Ana North, Bruno, Diego West; Carla absent).\n',
)
for (const table of ['customers', 'customers_invalidate']) {
  dimsync(
    'backfill',
    '--table',
    table,
    '--files',
    'data/customers_*.csv',
    '--time-from-name',
    'customers_%Y-%m-%dT%H%M.csv',
  )
}
process.stdout.write(
  '\nWith deletes: ignore, Carla stays current; Ana moved from South to North on 2024-03-10 14:30:\n',
)
dimsync('history', 'customers')
process.stdout.write('\nWith deletes: invalidate, Carla is closed when she disappears from the extract:\n')
dimsync('history', 'customers_invalidate')
process.stdout.write(
  '\nPoint in time: who was where on 2024-02-01? (an order placed then joins to these versions)\n',
)
dimsync('history', 'customers', '--as-of', '2024-02-01T00:00:00Z')
