import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import net from 'node:net'
import path from 'node:path'
import { BIGQUERY_FEATURES } from '../zetasql/bigquery-language.ts'

/* The gRPC surface is described by .proto files loaded at run time: its messages are plain objects here. */
/* eslint-disable @typescript-eslint/no-explicit-any */
export type Proto = any

const require = createRequire(import.meta.url)
const PACKAGE = '@fivetrandevelopers/zetasql'
const packageMain = require.resolve(PACKAGE)
// gRPC and the proto loader are the ZetaSQL package's own dependencies: resolve them from there.
const packageRequire = createRequire(packageMain)
const grpc = packageRequire('@grpc/grpc-js') as Proto
const protoLoader = packageRequire('@grpc/proto-loader') as Proto
const { LanguageFeature } = require(`${PACKAGE}/lib/types/zetasql/LanguageFeature`) as Proto

/**
 * How many parses and analyses a service keeps (#remembered). Their trees are large for wide tables: the
 * 1,300-column session test peaked at 1.16 GB keeping 64 and 1.45 GB keeping 512.
 */
const REMEMBERED_ANSWERS = 256

/** A failed ZetaSQL call: analysis errors (gRPC INVALID_ARGUMENT) and evaluation errors (OUT_OF_RANGE, ...). */
export class ZetaSqlError extends Error {
  override readonly name = 'ZetaSqlError'
  /** gRPC status code: 3 = the statement is invalid (analysis), 11 and others = it failed while running. */
  readonly code: number
  /** 1-based position in the statement text ZetaSQL was given, when it reported one. */
  readonly position?: { readonly line: number; readonly column: number }

  constructor(code: number, details: string) {
    const at = /\s*\[at (\d+):(\d+)\]\s*$/.exec(details)
    super(at ? details.slice(0, at.index) : details)
    this.code = code
    if (at) this.position = { line: Number(at[1]), column: Number(at[2]) }
  }
}

/**
 * Language options under which ZetaSQL accepts what BigQuery accepts (the analyzer helper's feature list),
 * with every statement kind allowed: the evaluator refuses DML unless `supportedStatementKinds` is empty.
 */
export const LANGUAGE_OPTIONS: Proto = Object.freeze({
  nameResolutionMode: 'NAME_RESOLUTION_DEFAULT',
  productMode: 'PRODUCT_EXTERNAL',
  enabledLanguageFeatures: BIGQUERY_FEATURES.filter((f) => f in LanguageFeature),
  supportedStatementKinds: [],
  reservedKeywords: ['QUALIFY'],
})

const EVALUATOR_OPTIONS: Proto = Object.freeze({
  languageOptions: LANGUAGE_OPTIONS,
  defaultTimezone: 'UTC',
  errorMessageMode: 'ERROR_MESSAGE_ONE_LINE',
})

// Pruning makes resolved table scans list only the columns a statement reads (what BigQuery bills); it is for
// analysis only: an INSERT evaluated with it crashes the server.
const ANALYZER_OPTIONS: Proto = Object.freeze({ ...EVALUATOR_OPTIONS, pruneUnusedColumns: true })

/** A catalog's `builtinFunctionOptions`: the functions BigQuery has (without it `TO_HEX` is unknown). */
export const BUILTIN_FUNCTION_OPTIONS: Proto = Object.freeze({ languageOptions: LANGUAGE_OPTIONS })

/**
 * A table's content (`tableContent` of an evaluation) that does not change from call to call: built when it is
 * first sent and encoded once per method; only the encoding is kept.
 */
export class TableContent {
  readonly #build: () => Proto
  constructor(build: () => Proto) {
    this.#build = build
  }
  build(): Proto {
    return this.#build()
  }
}

/** A gRPC method as proto-loader describes it: its path and its message (de)serializers. */
interface Method {
  readonly path: string
  readonly requestSerialize: (request: Proto) => Buffer
  readonly responseDeserialize: (bytes: Buffer) => Proto
}

/**
 * ZetaSQL's local service (the GoogleSQL analyzer and reference implementation, shipped in
 * @fivetrandevelopers/zetasql) as a child process on a free port, with a gRPC client of its own (the package's
 * client is a process-wide singleton). One per test file: starting takes 0.2-1 s.
 */
export class ZetaSqlService {
  readonly #child: ChildProcess
  readonly #api: Proto
  /** The service's methods by the name the client calls them (`analyze`, `evaluateQuery`, ...). */
  readonly #methods = new Map<string, Method>()
  #stderr = ''

  private constructor(child: ChildProcess, api: Proto, methods: Readonly<Record<string, Proto>>) {
    this.#child = child
    this.#api = api
    for (const method of Object.values(methods)) this.#methods.set(method.originalName, method)
    child.stderr?.on('data', (d: Buffer) => {
      this.#stderr = (this.#stderr + d.toString()).slice(-4000)
    })
  }

  static async start(): Promise<ZetaSqlService> {
    const port = await freePort()
    const lib = path.dirname(packageMain)
    const binary = path.join(
      lib,
      'zetasql',
      process.arch === 'arm64' ? 'remote_server_arm.so' : 'remote_server.so',
    )
    const child = spawn(binary, ['localhost', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] })
    // A test process that dies must not leave the server behind.
    const killChild = () => child.kill('SIGKILL')
    process.once('exit', killChild)
    child.once('exit', () => process.off('exit', killChild))
    const definition = protoLoader.loadSync('local_service.proto', {
      defaults: true,
      oneofs: true,
      longs: String,
      enums: String,
      includeDirs: [path.join(lib, 'zetasql', 'protos')],
    })
    const proto = grpc.loadPackageDefinition(definition)
    const api = new proto.zetasql.local_service.ZetaSqlLocalService(
      `localhost:${port}`,
      grpc.credentials.createInsecure(),
      {
        'grpc.max_send_message_length': 512 * 1024 * 1024,
        'grpc.max_receive_message_length': 512 * 1024 * 1024,
      },
    )
    const service = new ZetaSqlService(child, api, proto.zetasql.local_service.ZetaSqlLocalService.service)
    for (let attempt = 0; ; attempt++) {
      if (child.exitCode !== null) throw new Error(`the ZetaSQL server exited: ${service.#stderr}`)
      try {
        await service.#call('formatSql', { sql: 'SELECT 1' })
        return service
      } catch (error) {
        if ((error as ZetaSqlError).code !== 14 || attempt > 150) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  }

  /** Parses a script (or one statement) into ZetaSQL's parse tree, with byte offsets of every node. */
  async parseScript(sql: string): Promise<Proto> {
    const response = await this.#remembered('parse', {
      sqlStatement: sql,
      allowScript: true,
      options: LANGUAGE_OPTIONS,
    })
    return response.parsedScript
  }

  /** Resolves one statement against `catalog`; answers the resolved AST (pruned to the columns it reads). */
  async analyze(sql: string, catalog: Proto): Promise<Proto> {
    const response = await this.#remembered('analyze', {
      sqlStatement: sql,
      simpleCatalog: catalog,
      options: ANALYZER_OPTIONS,
    })
    return response.resolvedStatement
  }

  /**
   * Runs a query on the reference implementation; `tables` holds the content of every table it reads (a
   * TableContentProto object, or a TableContent).
   */
  async evaluateQuery(sql: string, catalog: Proto, tables: Record<string, Proto>): Promise<Proto> {
    return this.#call('evaluateQuery', {
      sql,
      simpleCatalog: catalog,
      tableContent: tables,
      options: EVALUATOR_OPTIONS,
    })
  }

  /** Runs one DML statement; answers the rows it inserts, updates and deletes (never writes anything). */
  async evaluateModify(sql: string, catalog: Proto, tables: Record<string, Proto>): Promise<Proto> {
    return this.#call('evaluateModify', {
      sql,
      simpleCatalog: catalog,
      tableContent: tables,
      options: EVALUATOR_OPTIONS,
    })
  }

  async stop(): Promise<void> {
    try {
      this.#api.close()
    } catch {
      // already closed
    }
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return
    const exited = new Promise((resolve) => this.#child.once('exit', resolve))
    this.#child.kill('SIGTERM')
    await exited
  }

  /**
   * A parse or an analysis depends on the request alone (the text, the catalog's schemas, the options), never on
   * table contents, and the emulator asks for the same one many times: a script parsed at each run, a statement
   * analyzed for its partition filters and again for its bytes, the same merge on every batch of a test. The
   * answers are kept (the most recent ones) and shared: callers read them and never change them.
   */
  #remembered(method: 'parse' | 'analyze', request: Proto): Promise<Proto> {
    // The options are constants of the method; a catalog is hashed once (callers never change one after use).
    const hash = createHash('sha256').update(method).update('\0')
    if (request.simpleCatalog !== undefined) hash.update(catalogKey(request.simpleCatalog))
    const key = hash.update('\0').update(request.sqlStatement).digest('base64')
    const known = this.#answers.get(key)
    if (known !== undefined) {
      this.#answers.delete(key)
      this.#answers.set(key, known)
      return known
    }
    const answer = this.#call(method, request)
    this.#answers.set(key, answer)
    // A failed call is not kept: the caller sees its error, the next one asks again.
    answer.catch(() => this.#answers.delete(key))
    if (this.#answers.size > REMEMBERED_ANSWERS) this.#answers.delete(this.#answers.keys().next().value!)
    return answer
  }
  readonly #answers = new Map<string, Promise<Proto>>()

  #call(method: string, request: Proto): Promise<Proto> {
    const definition = this.#methods.get(method)
    if (definition === undefined) throw new Error(`the ZetaSQL service has no method ${method}`)
    return new Promise((resolve, reject) => {
      this.#api.makeUnaryRequest(
        definition.path,
        (message: Proto) => serialize(definition, message),
        definition.responseDeserialize,
        request,
        (error: { code?: number; details?: string } | null, response: Proto) => {
          if (error === null) return resolve(response)
          if (error.code === 14 && this.#child.exitCode !== null)
            return reject(new Error(`the ZetaSQL server died: ${this.#stderr.trim().split('\n')[0] ?? ''}`))
          reject(new ZetaSqlError(error.code ?? 2, error.details ?? String(error)))
        },
      )
    })
  }
}

/**
 * A request's protobuf bytes. The options, the catalog's builtin function options (the same frozen objects on
 * every call) and a TableContent are the same on many calls: each is encoded once (as a request holding
 * only it) and appended. A message field that occurs twice in protobuf's wire format is merged, a map is a
 * repeated field of entries, and fields may come in any order, so the server reads the same request as if it had
 * been encoded whole.
 */
function serialize(method: Method, request: Proto): Buffer {
  const { options, simpleCatalog, tableContent, ...rest } = request
  const parts: Buffer[] = []
  const variable: Proto = rest
  if (options !== undefined) parts.push(constantPart(method, 'options', options, () => ({ options })))
  if (tableContent !== undefined) {
    // A map field is a repeated field of entries on the wire: each frozen table's entry is encoded once.
    const changing: Record<string, Proto> = {}
    for (const [name, content] of Object.entries(tableContent as Record<string, Proto>))
      if (content instanceof TableContent)
        parts.push(
          constantPart(method, `tableContent ${name}`, content, () => ({
            tableContent: { [name]: content.build() },
          })),
        )
      else changing[name] = content
    variable.tableContent = changing
  }
  if (simpleCatalog !== undefined) {
    const { builtinFunctionOptions, ...catalog } = simpleCatalog
    variable.simpleCatalog = catalog
    if (builtinFunctionOptions !== undefined)
      parts.push(
        constantPart(method, 'builtinFunctionOptions', builtinFunctionOptions, () => ({
          simpleCatalog: { builtinFunctionOptions },
        })),
      )
  }
  if (parts.length === 0) return method.requestSerialize(request)
  return Buffer.concat([method.requestSerialize(variable), ...parts])
}

/**
 * The encoding of a request holding only `value`, kept per value, method and field: `value` is a frozen object or
 * a TableContent.
 */
function constantPart(method: Method, field: string, value: object, request: () => Proto): Buffer {
  if (!(value instanceof TableContent) && !Object.isFrozen(value)) return method.requestSerialize(request())
  const key = `${method.path} ${field}`
  let byKey = encodedConstants.get(value)
  if (byKey === undefined) encodedConstants.set(value, (byKey = new Map()))
  let bytes = byKey.get(key)
  if (bytes === undefined) byKey.set(key, (bytes = method.requestSerialize(request())))
  return bytes
}
const encodedConstants = new WeakMap<object, Map<string, Buffer>>()

/**
 * A catalog's JSON text, hashed; computed once per catalog object, which is frozen then: a catalog changed after
 * its hash was kept would be answered with another catalog's analysis (a refusal BigQuery makes could be missed),
 * so changing one throws instead.
 */
function catalogKey(catalog: Proto): string {
  let key = catalogKeys.get(catalog)
  if (key === undefined) {
    key = createHash('sha256').update(JSON.stringify(catalog)).digest('base64')
    deepFreeze(catalog)
    catalogKeys.set(catalog, key)
  }
  return key
}

function deepFreeze(value: Proto): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return
  Object.freeze(value)
  for (const field of Object.values(value)) deepFreeze(field)
}
const catalogKeys = new WeakMap<object, string>()

/** A TCP port free on this machine now (the server binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}
