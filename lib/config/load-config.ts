import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError } from '../core/errors.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import { parseProject } from './parse-project.ts'

export const DEFAULT_CONFIG_FILE = 'dimsync.yaml'

/** Reads and resolves a dimsync.yaml. Throws ConfigError for a missing file and for every invalid content. */
export async function loadProject(configPath: string = DEFAULT_CONFIG_FILE): Promise<ProjectSpec> {
  const file = path.resolve(configPath)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new ConfigError(file, [`config file not found (give another with --config)`])
    if (code === 'EISDIR') throw new ConfigError(file, [`config path is a folder, not a file`])
    throw new ConfigError(file, [`cannot read config file ${file}: ${(error as Error).message}`])
  }
  return parseProject(text, file)
}
