import { LineCounter, parseDocument } from 'yaml'
import { ConfigError } from '../core/errors.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import { resolveProject } from './resolve-project.ts'

/**
 * Parses the text of a dimsync.yaml into plain data, or throws ConfigError naming line:column of every YAML
 * syntax error (duplicate keys included: YAML would otherwise keep one silently).
 */
export function parseConfigYaml(text: string, configPath: string): unknown {
  const lineCounter = new LineCounter()
  // Merge keys (`<<: *shared`) let tables share a source block; yaml keeps them off in YAML 1.2 by default.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, merge: true })
  if (doc.errors.length > 0) {
    throw new ConfigError(
      configPath,
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0])
        return `${line}:${col}: YAML syntax error: ${error.message}`
      }),
    )
  }
  try {
    return doc.toJS()
  } catch (error) {
    // toJS fails on alias bombs and unresolved aliases; both are the file's fault, not a crash.
    throw new ConfigError(configPath, [`(root): ${error instanceof Error ? error.message : String(error)}`])
  }
}

/** YAML text → frozen ProjectSpec. Pure apart from resolving `configPath` against the working directory. */
export function parseProject(text: string, configPath: string): ProjectSpec {
  return resolveProject(parseConfigYaml(text, configPath), configPath)
}
