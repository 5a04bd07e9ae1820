export { loadProject, DEFAULT_CONFIG_FILE } from './load-config.ts'
export { parseProject, parseConfigYaml } from './parse-project.ts'
export {
  resolveProject,
  normalizeOpenEnd,
  DEFAULT_WAREHOUSE,
  DEFAULT_STAGING,
  DEFAULT_STATE,
  DEFAULT_MAX_DELETE_SHARE,
} from './resolve-project.ts'
export { checkTableAgainstSource, assertTableMatchesSource } from './source-columns-check.ts'
export { COLUMN_PRESETS, PRESET_NAMES, METADATA_COLUMN_OPTIONS } from '../core/metadata-columns.ts'
export { suggest } from './did-you-mean.ts'
export { configJsonSchema, renderConfigJsonSchema } from './json-schema.ts'
export type { ConfigDocument } from './config-schema.ts'
