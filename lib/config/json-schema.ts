import { z } from 'zod'
import { configDocumentSchema } from './config-schema.ts'

/**
 * JSON Schema of dimsync.yaml for editors (yaml-language-server). Draft-07 because that is the draft editors
 * support best. It checks shape only; cross-field rules need `dimsync validate`.
 */
export function configJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(configDocumentSchema, { target: 'draft-07', io: 'input' }) as Record<
    string,
    unknown
  >
  const { $schema, ...rest } = generated
  return { $schema, title: 'dimsync.yaml', ...rest }
}

/** The exact text of schema/dimsync.schema.json; a test compares the committed file with it. */
export function renderConfigJsonSchema(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`
}
