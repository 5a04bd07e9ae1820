#!/usr/bin/env node
/**
 * Runs after esbuild inside NodejsFunction bundling (commandHooks.afterBundling): copies DuckDB's JavaScript
 * packages and the native binding built for the Lambda's architecture into the bundle's node_modules, and
 * dimsync.yaml next to index.mjs. esbuild cannot bundle a .node file, and `npm install` in the bundle would
 * pick the binding of the machine running cdk (a Mac, an x86_64 CI runner), not of the Lambda.
 *
 * usage: node stage-native-modules.mjs --project <root> --out <bundle dir> --arch x64|arm64 --config <file>
 */
import { cpSync, existsSync, readFileSync } from 'node:fs'
import path from 'node:path'

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, value, index, all) => {
    if (index % 2 === 0) pairs.push([value.replace(/^--/, ''), all[index + 1]])
    return pairs
  }, []),
)
for (const required of ['project', 'out', 'arch', 'config']) {
  if (!args[required]) {
    console.error(`stage-native-modules: --${required} is required`)
    process.exit(2)
  }
}

const binding = `@duckdb/node-bindings-linux-${args.arch}`
// A binding for another platform than this machine's is fetched by synth into .lambda-native, verified against
// package-lock.json's integrity (infra/bundling/native-binding.ts), without touching node_modules.
const searchRoots = [
  path.join(args.project, 'node_modules'),
  path.join(args.project, '.lambda-native', 'node_modules'),
]
const find = (name) =>
  searchRoots.map((root) => path.join(root, name)).find((dir) => existsSync(path.join(dir, 'package.json')))

const bindingsDir = find('@duckdb/node-bindings')
if (bindingsDir === undefined) {
  console.error('stage-native-modules: @duckdb/node-bindings is not installed; run npm ci first')
  process.exit(1)
}
const version = JSON.parse(readFileSync(path.join(bindingsDir, 'package.json'), 'utf8')).version
const packages = ['@duckdb/node-api', '@duckdb/node-bindings', binding, 'detect-libc']
for (const name of packages) {
  const from = find(name)
  if (from === undefined) {
    console.error(
      `stage-native-modules: ${name} is not installed, so the Lambda (linux ${args.arch}) would have no DuckDB binary.\n` +
        `cdk synth fetches it once (verified against package-lock.json) into .lambda-native: synth with access to ` +
        `the npm registry, or deploy with aws: { architecture: x86_64 } in dimsync.yaml.`,
    )
    process.exit(1)
  }
  if (name === binding) {
    const pkg = JSON.parse(readFileSync(path.join(from, 'package.json'), 'utf8'))
    if (pkg.version !== version) {
      console.error(`stage-native-modules: ${name} is ${pkg.version} but @duckdb/node-bindings is ${version}`)
      process.exit(1)
    }
  }
  cpSync(from, path.join(args.out, 'node_modules', name), { recursive: true, dereference: true })
}
cpSync(args.config, path.join(args.out, 'dimsync.yaml'))
