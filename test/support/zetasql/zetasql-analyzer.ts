import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '../bigquery-emulator/zetasql-service.ts'
import { BIGQUERY_FEATURES, BIGQUERY_STATEMENT_KINDS, TYPE_KINDS } from './bigquery-language.ts'

/* The package is CommonJS with loose proto-loader types; this helper keeps the untyped surface in one place. */
/* eslint-disable @typescript-eslint/no-explicit-any */
const require = createRequire(import.meta.url)
const PKG = '@fivetrandevelopers/zetasql'
const { ZetaSQLClient } = require(PKG) as { ZetaSQLClient: any }

export interface CatalogColumn {
  readonly name: string
  /** A BigQuery type name (`STRING`, `NUMERIC(10, 2)`, ...) or a ZetaSQL TypeProto. */
  readonly type: string | object
}

/** The verdict on one statement: ok, or the analyzer's one-line error. */
export interface StatementVerdict {
  readonly label: string
  readonly ok: boolean
  readonly error?: string
  /** The resolved statement tree (ZetaSQL's AnyResolvedStatementProto, as the client decodes it), when ok. */
  readonly resolved?: unknown
}

const LOC = /\s*\[at \d+:\d+\]/

/**
 * The real GoogleSQL analyzer (ZetaSQL, in @fivetrandevelopers/zetasql) as a test helper: starts its gRPC server
 * on a free port, holds a catalog of tables (`project.dataset.table` as nested catalogs, temporary tables at the
 * root), analyzes statements one by one and keeps the catalog in step with the DDL it accepts (CREATE TABLE,
 * CREATE TEMP TABLE AS SELECT, DROP), the way BigQuery would run a script.
 */
export class ZetaSqlAnalyzer {
  readonly #child: ChildProcess
  readonly #client: any
  readonly #languageOptions: object
  #tables = new Map<string, CatalogColumn[]>()
  /** Script variables set so far (`SET name = …`), by name, with their ZetaSQL types. */
  #variables = new Map<string, object>()
  #registered: number | undefined
  #dirty = true

  private constructor(child: ChildProcess, client: any, languageOptions: object) {
    this.#child = child
    this.#client = client
    this.#languageOptions = languageOptions
  }

  /** Starts the analyzer server (0.2–1 s). Call `stop()` when done. */
  static async start(): Promise<ZetaSqlAnalyzer> {
    const port = await freePort()
    const lib = path.dirname(require.resolve(PKG))
    const binary = path.join(
      lib,
      'zetasql',
      process.arch === 'arm64' ? 'remote_server_arm.so' : 'remote_server.so',
    )
    const child = spawn(binary, ['localhost', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    ZetaSQLClient.init(port)
    const client = ZetaSQLClient.getInstance()
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`ZetaSQL server exited: ${stderr}`)
      try {
        await client.formatSql({ sql: 'SELECT 1' })
        break
      } catch (error) {
        if ((error as { code?: number }).code !== 14 || i > 100) throw error
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    const { LanguageFeature } = require(`${PKG}/lib/types/zetasql/LanguageFeature`)
    const { ResolvedNodeKind } = require(`${PKG}/lib/types/zetasql/ResolvedNodeKind`)
    const languageOptions = {
      nameResolutionMode: 'NAME_RESOLUTION_DEFAULT',
      productMode: 'PRODUCT_EXTERNAL',
      enabledLanguageFeatures: BIGQUERY_FEATURES.filter((f) => f in LanguageFeature),
      supportedStatementKinds: BIGQUERY_STATEMENT_KINDS.filter((k) => k in ResolvedNodeKind),
      reservedKeywords: ['QUALIFY'],
    }
    return new ZetaSqlAnalyzer(child, client, languageOptions)
  }

  /** Forgets every table (between independent scripts). */
  reset(): void {
    this.#tables = new Map()
    this.#variables = new Map()
    this.#dirty = true
  }

  /** Registers a table; `name` is the dotted path (`project.dataset.table`) or a bare temporary table name. */
  addTable(name: string, columns: readonly CatalogColumn[]): void {
    this.#tables.set(name, [...columns])
    this.#dirty = true
  }

  /** The columns of a registered table (`project.dataset.table`, or a bare temporary table name). */
  columnsOf(name: string): readonly CatalogColumn[] | undefined {
    return this.#tables.get(name)
  }

  hasTable(name: string): boolean {
    return this.#tables.has(name)
  }

  /**
   * Analyzes one statement; on success, DDL updates the catalog for the statements that follow. With
   * `pruneUnusedColumns`, each table scan of the resolved tree lists only the columns the statement references.
   */
  async analyze(
    label: string,
    sql: string,
    options: { pruneUnusedColumns?: boolean } = {},
  ): Promise<StatementVerdict> {
    // A script's `SET variable = expression`: the expression is read as a query; later statements see the
    // variable as a named constant of its type (a constant, as BigQuery binds it when each statement runs).
    const assignment = /^\s*SET\s+([A-Za-z_]\w*)\s*=\s*([\s\S]*)$/i.exec(sql)
    if (assignment !== null) {
      const verdict = await this.analyze(label, `SELECT ${assignment[2]}`, options)
      if (verdict.ok) {
        this.#variables.set(assignment[1]!, outputType(verdict.resolved))
        this.#dirty = true
      }
      return verdict
    }
    let response: any
    try {
      response = await this.#client.analyze({
        registeredCatalogId: await this.#catalogId(),
        sqlStatement: sql,
        options: {
          languageOptions: this.#languageOptions,
          errorMessageMode: 'ERROR_MESSAGE_ONE_LINE',
          defaultTimezone: 'UTC',
          allowUndeclaredParameters: true,
          pruneUnusedColumns: options.pruneUnusedColumns ?? false,
        },
      })
    } catch (error) {
      const e = error as { code?: number; details?: string }
      if (e.code === undefined || [1, 4, 14].includes(e.code)) throw error
      return { label, ok: false, error: String(e.details ?? error).replace(LOC, '') }
    }
    this.#track(response.resolvedStatement)
    return { label, ok: true, resolved: response.resolvedStatement }
  }

  /** Parses a whole script (DECLARE, SET, BEGIN … EXCEPTION … END, transactions); returns the syntax error or undefined. */
  async parseScript(text: string): Promise<string | undefined> {
    const parse = promisify(ZetaSQLClient.API.parse.bind(ZetaSQLClient.API))
    try {
      await parse({ sqlStatement: text, options: this.#languageOptions, allowScript: true })
      return undefined
    } catch (error) {
      return String((error as { details?: string }).details ?? error)
    }
  }

  async stop(): Promise<void> {
    try {
      ZetaSQLClient.API?.close()
    } catch {
      // the channel may already be closed
    }
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return
    const exited = new Promise((resolve) => this.#child.once('exit', resolve))
    this.#child.kill('SIGTERM')
    await exited
  }

  async #catalogId(): Promise<number> {
    if (this.#dirty || this.#registered === undefined) {
      if (this.#registered !== undefined)
        await this.#client.unRegisterCatalog({ registeredId: this.#registered }).catch(() => undefined)
      const response = await this.#client.registerCatalog({ simpleCatalog: this.#proto() })
      this.#registered = Number(response.registeredId)
      this.#dirty = false
    }
    return this.#registered
  }

  #proto(): object {
    interface Node {
      name: string
      table: { name: string; column: { name: string; type: object }[] }[]
      catalog: Map<string, Node>
    }
    const root: Node = { name: 'bigquery', table: [], catalog: new Map() }
    for (const [name, columns] of this.#tables) {
      const parts = name.split('.')
      let node = root
      for (const part of parts.slice(0, -1)) {
        let child = node.catalog.get(part)
        if (!child) node.catalog.set(part, (child = { name: part, table: [], catalog: new Map() }))
        node = child
      }
      node.table.push({
        name: parts.at(-1)!,
        column: columns.map((c) => ({ name: c.name, type: typeProto(c.type) })),
      })
    }
    const toProto = (n: Node): object => ({
      name: n.name,
      table: n.table,
      catalog: [...n.catalog.values()].map(toProto),
    })
    const constant = [...this.#variables].map(([name, type]) => ({ namePath: [name], type, value: {} }))
    return {
      ...toProto(root),
      constant,
      builtinFunctionOptions: { languageOptions: this.#languageOptions },
    }
  }

  /** Keeps the catalog in step with DDL, as BigQuery would for the rest of the script. */
  #track(resolved: any): void {
    const chain: string[] = []
    let leaf = resolved
    while (leaf && typeof leaf.node === 'string' && leaf[leaf.node]) {
      chain.push(leaf.node)
      leaf = leaf[leaf.node]
    }
    const flat: any = {}
    for (let x = leaf; x; x = x.parent)
      for (const [k, v] of Object.entries(x)) if (k !== 'parent' && !(k in flat)) flat[k] = v
    const kind = chain.at(-1) ?? ''
    if (flat.columnDefinitionList && flat.namePath && /CreateTable/.test(kind)) {
      const columns = flat.columnDefinitionList.map((cd: any) => ({ name: cd.name, type: cd.type }))
      this.addTable(flat.namePath.join('.'), columns)
    } else if (/AlterTable/.test(kind) && flat.namePath) {
      const name = flat.namePath.join('.')
      const added: CatalogColumn[] = []
      const visit = (o: any): void => {
        if (!o || typeof o !== 'object') return
        if (o.columnDefinition?.name)
          added.push({ name: o.columnDefinition.name, type: o.columnDefinition.type })
        for (const v of Object.values(o)) visit(v)
      }
      visit(flat.alterActionList)
      this.addTable(name, [...(this.#tables.get(name) ?? []), ...added])
    } else if (/Drop/.test(kind) && flat.namePath) {
      this.#tables.delete(flat.namePath.join('.'))
      this.#dirty = true
    }
  }
}

/** The type of the only column a resolved `SELECT <expression>` returns. */
function outputType(resolved: any): object {
  let node = resolved
  while (node && typeof node.node === 'string' && node[node.node]) node = node[node.node]
  const type = node?.outputColumnList?.[0]?.column?.type
  if (type === undefined) throw new Error('analyzer: no output column in the resolved SELECT')
  return type
}

function typeProto(type: string | object): object {
  if (typeof type !== 'string') return type
  const base = type
    .trim()
    .toUpperCase()
    .replace(/\s*\(.*\)\s*$/, '')
  const kind = TYPE_KINDS[base]
  if (kind === undefined) throw new Error(`catalog: unknown BigQuery type ${type}`)
  return { typeKind: kind }
}
