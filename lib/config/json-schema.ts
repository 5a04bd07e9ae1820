import { z } from 'zod'
import { configDocumentSchema } from './config-schema.ts'
import { factSchema } from './fact-schema.ts'

/**
 * JSON Schema of dimsync.yaml for editors (yaml-language-server). Draft-07 because that is the draft editors
 * support best. It checks shape only; cross-field rules need `dimsync validate`.
 */
export function configJsonSchema(): Record<string, unknown> {
  // The parser reads `facts:` after the tables (resolve-facts.ts checks it against them), so the document schema
  // leaves it open; editors get the shape of a fact table from fact-schema.ts.
  const document = configDocumentSchema.extend({
    facts: z
      .array(factSchema)
      .nullable()
      .optional()
      .describe(configDocumentSchema.shape.facts.description ?? ''),
  })
  const generated = z.toJSONSchema(document, { target: 'draft-07', io: 'input' }) as Record<string, unknown>
  const { $schema, ...rest } = generated
  return { $schema, title: 'dimsync.yaml', ...rest }
}

/** The exact text of schema/dimsync.schema.json; a test compares the committed file with it. */
export function renderConfigJsonSchema(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`
}
