/** Writes schema/dimsync.schema.json from the zod schema of dimsync.yaml (`npm run schema`). */
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { renderConfigJsonSchema } from '../lib/config/json-schema.ts'

const SCHEMA_FILE = fileURLToPath(new URL('../schema/dimsync.schema.json', import.meta.url))

await writeFile(SCHEMA_FILE, renderConfigJsonSchema())
console.log(`wrote ${SCHEMA_FILE}`)
