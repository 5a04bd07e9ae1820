// The CLI's TypeScript, compiled by esbuild (the compiler tsx uses) into a cache in node_modules the first time the CLI
// runs and again whenever a source file changes, so later runs import plain JavaScript without tsx's module hooks
// (on Node 20 a loader thread: 30 MB and 0.3-1 s of start-up). Nothing to build by hand: the cache is checked
// against the content of every source file it was compiled from, at every start.
import { createHash, randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { isBuiltin } from 'node:module'
import { dirname, extname, join, relative, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))
const ENTRY = join(ROOT, 'functions', 'local', 'cli.ts')
const COMPILED_ENTRY = join('functions', 'local', 'cli.js')
/**
 * Builds that are no longer current (about 1 MB each) are removed after this long: a run still going may import
 * their chunks when it gets to a step (a merge starts after the extract).
 */
const KEEP_OLD_BUILDS_MS = 86_400_000

const sha1 = (text) => createHash('sha1').update(text).digest('hex')

/**
 * The file URL of the compiled CLI, compiling it first if a source changed; undefined when there is no usable
 * cache (no esbuild, a cache folder that is not the user's own, a source that does not compile): tsx runs then.
 */
export async function compiledEntry() {
  const cache = cacheFolder()
  if (cache === undefined) return undefined
  const current = readCurrent(cache)
  const build = current !== undefined && unchanged(current.inputs) ? current.build : await compile(cache)
  return build === undefined ? undefined : pathToFileURL(join(cache, build, COMPILED_ENTRY)).href
}

/**
 * node_modules/.cache/dimsync-cli/<checkout and Node version>: inside the package, so the compiled files import
 * the package's dependencies. Used only when this user owns it (a read-only install runs tsx).
 */
function cacheFolder() {
  const folder = join(
    ROOT,
    'node_modules',
    '.cache',
    'dimsync-cli',
    sha1(`${ROOT}\0${process.version}`).slice(0, 16),
  )
  mkdirSync(folder, { recursive: true, mode: 0o700 })
  const info = statSync(folder)
  if (typeof process.getuid === 'function' && info.uid !== process.getuid()) return undefined
  return folder
}

function readCurrent(cache) {
  try {
    return JSON.parse(readFileSync(join(cache, 'current.json'), 'utf8'))
  } catch {
    return undefined
  }
}

/**
 * Every source file the build was compiled from still has the content it had: the same size and modification
 * time as when it was read (a stat per file), or else the same content hash.
 */
function unchanged(inputs) {
  try {
    return Object.entries(inputs).every(([path, { size, mtimeMs, hash }]) => {
      const file = join(ROOT, path)
      const info = statSync(file)
      if (info.size === size && info.mtimeMs === mtimeMs) return true
      return sha1(readFileSync(file)) === hash
    })
  } catch {
    return false
  }
}

async function compile(cache) {
  let esbuild
  try {
    esbuild = await import('esbuild')
  } catch {
    return undefined
  }
  const build = `b-${Date.now()}-${process.pid}-${randomBytes(4).toString('hex')}`
  const inputs = {}
  // What decides how the sources compile is an input too: the TypeScript settings and this compiler's code.
  for (const path of ['tsconfig.json', 'bin/compile-cache.mjs'])
    if (existsSync(join(ROOT, path))) record(inputs, path)
  // Each file is compiled from the content hashed here, and import.meta keeps naming the source file.
  const sources = {
    name: 'dimsync-sources',
    setup(builder) {
      builder.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
        const text = record(inputs, relative(ROOT, args.path).split(sep).join('/')).toString('utf8')
        const contents = text
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
          .replaceAll('import.meta.filename', JSON.stringify(args.path))
        return { contents, loader: args.path.endsWith('ts') ? 'ts' : 'js' }
      })
    },
  }
  try {
    await esbuild.build(
      bundleOptions(ENTRY, join(cache, build), [sources], (manifest) =>
        record(inputs, relative(ROOT, manifest).split(sep).join('/')),
      ),
    )
  } catch {
    rmSync(join(cache, build), { recursive: true, force: true })
    return undefined
  } finally {
    // esbuild's compiler process would otherwise stay beside the run until it ends (and show as its child).
    await esbuild.stop()
  }
  // package.json makes Node read the compiled files as ES modules, whatever the cache folder's parents say.
  writeFileSync(join(cache, build, 'package.json'), '{"type":"module"}\n')
  const next = join(cache, `current.json.${build}`)
  writeFileSync(next, JSON.stringify({ build, inputs }))
  renameSync(next, join(cache, 'current.json'))
  removeOldBuilds(cache, build)
  return build
}

/**
 * How the CLI is compiled (bench/cli-startup.ts compiles its baseline the same way): one chunk per lazily imported
 * module, the packages left to Node. `recordManifest` is told the package.json files that decided how a package
 * is loaded: an upgrade of the package compiles again.
 */
export function bundleOptions(entry, outdir, plugins = [], recordManifest = () => undefined) {
  return {
    entryPoints: [entry],
    outbase: ROOT,
    outdir,
    bundle: true,
    splitting: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    // Maps for DIMSYNC_DEBUG's stacks, pointing at the source files instead of holding a copy of them.
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'silent',
    plugins:
      typeof process.getBuiltinModule === 'function'
        ? [...plugins, commonJsPackages(recordManifest)]
        : plugins,
  }
}

const REQUIRED = 'dimsync-required'

/**
 * A package Node would load as CommonJS is loaded with require(), not import: Node's import of CommonJS first reads
 * the package's files for the names they export, and require does not (DuckDB's API, the largest, loaded in about
 * 70 ms instead of 115 ms). The compiled chunk requires it where the static import was (in a chunk imported
 * lazily, when that chunk is); the default import is module.exports, as Node's import gives it.
 */
function commonJsPackages(recordManifest) {
  return {
    name: 'dimsync-commonjs-packages',
    setup(builder) {
      builder.onResolve({ filter: /^[^./]/ }, (args) => {
        // A dynamic import() stays Node's: split into a chunk of its own, a required package would offer its
        // exports as `default` only.
        if (args.kind !== 'import-statement' || isBuiltin(args.path)) return undefined
        const loading = howNodeImports(args.path)
        if (loading === undefined) return undefined
        for (const manifest of loading.manifests) recordManifest(manifest)
        return loading.commonJs ? { path: args.path, namespace: REQUIRED } : undefined
      })
      const requireFrom = JSON.stringify(pathToFileURL(join(ROOT, 'package.json')).href)
      builder.onLoad({ filter: /.*/, namespace: REQUIRED }, (args) => ({
        contents: `module.exports = process.getBuiltinModule('node:module').createRequire(${requireFrom})(${JSON.stringify(args.path)})`,
        loader: 'js',
      }))
    },
  }
}

/**
 * Whether Node's import of `specifier` (from this package) loads a CommonJS file, and the package.json files that
 * decide it (the package's own, and the nearest to the file, whose `type` says CommonJS or not); undefined when
 * it does not resolve (an optional client library not installed: the import stays, and fails as it would).
 */
function howNodeImports(specifier) {
  let file
  try {
    file = fileURLToPath(import.meta.resolve(specifier))
  } catch {
    return undefined
  }
  const name = specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/')
  const manifests = []
  let type
  for (let folder = dirname(file); folder !== dirname(folder); folder = dirname(folder)) {
    const manifest = join(folder, 'package.json')
    if (!existsSync(manifest)) continue
    const fields = JSON.parse(readFileSync(manifest, 'utf8'))
    if (manifests.length === 0) type = fields.type
    manifests.push(manifest)
    if (fields.name === name) break
  }
  const extension = extname(file)
  const commonJs = extension === '.cjs' || (extension === '.js' && type !== 'module')
  return { commonJs, manifests }
}

/**
 * Reads a source file (relative to the package) and records its size, time and content hash. Stat before reading:
 * a file changed after it was read has another time, and its hash then decides.
 */
function record(inputs, path) {
  const file = join(ROOT, path)
  const { size, mtimeMs } = statSync(file)
  const content = readFileSync(file)
  inputs[path] = { size, mtimeMs, hash: sha1(content) }
  return content
}

function removeOldBuilds(cache, keep) {
  for (const name of readdirSync(cache)) {
    if (!name.startsWith('b-') || name === keep) continue
    const folder = join(cache, name)
    if (Date.now() - statSync(folder).mtimeMs > KEEP_OLD_BUILDS_MS)
      rmSync(folder, { recursive: true, force: true })
  }
}
