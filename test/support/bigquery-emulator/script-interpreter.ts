import { BigQueryError, invalidQuery } from './api-errors.ts'
import type { OpenTransaction, Session } from './sessions.ts'
import { isDdl, runDdl, type DdlOutcome, type DdlScope } from './ddl-executor.ts'
import { child, childList, lineAndColumn, statementList, treeNode, type TreeNode } from './sql-tree.ts'
import {
  isDml,
  withVariables,
  type Fragment,
  type QueryResult,
  type StatementExecutor,
  type Variable,
} from './statement-executor.ts'
import { typeText } from './field-types.ts'
import type { StoredTable, TableStore } from './table-store.ts'
import { tableKey } from './table-store.ts'
import { isNull, NULL_VALUE } from './values.ts'
import { ZetaSqlError, type Proto, type ZetaSqlService } from './zetasql-service.ts'

export interface ScriptOptions {
  readonly projectId: string
  readonly location?: string
  readonly defaultDataset?: string
  readonly jobId: string
  /**
   * Dry run: statements are resolved (and their bytes counted) but queries and DML are not run; DDL runs on the
   * store it is given, which must be a scratch copy. A script's dry run stops, as BigQuery's does, after its first
   * DDL statement or at its first IF: what follows is neither resolved nor estimated.
   */
  readonly dryRun?: boolean
  /**
   * The session the job runs in: its variables, temporary tables and open transaction are the script's to start
   * with, and what the script leaves of them stays for the session's next job (a failed job rolls its transaction
   * back). Without one, a transaction still open when the script ends is rolled back.
   */
  readonly session?: Session
  /** Called before each query, DML or DDL statement runs; throwing a BigQueryError fails that statement. */
  readonly beforeStatement?: (statement: StatementInfo) => void
}

export interface StatementInfo {
  readonly jobId: string
  readonly kind: string
  readonly text: string
}

export interface ScriptOutcome {
  /** True when the query is a script (more than one statement, or a procedural one). */
  readonly isScript: boolean
  /** `statistics.query.statementType`: SCRIPT, or the single statement's type. */
  readonly statementType: string
  /** The result of the last query statement (a script's result), if any ran. */
  readonly result?: QueryResult
  readonly bytesProcessed: number
  /** Statements run (a script's child jobs). */
  readonly statements: number
  readonly dmlAffectedRows?: number
  readonly ddl?: DdlOutcome
}

const STATEMENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  astQueryStatementNode: 'SELECT',
  astInsertStatementNode: 'INSERT',
  astUpdateStatementNode: 'UPDATE',
  astDeleteStatementNode: 'DELETE',
  astMergeStatementNode: 'MERGE',
  astTruncateStatementNode: 'TRUNCATE_TABLE',
})

const PROCEDURAL = new Set([
  'astVariableDeclarationNode',
  'astSingleAssignmentNode',
  'astBeginEndBlockNode',
  'astIfStatementNode',
  'astRaiseStatementNode',
  'astReturnStatementNode',
  'astBeginStatementNode',
  'astCommitStatementNode',
  'astRollbackStatementNode',
])

class ReturnSignal {}

/** Where BigQuery's dry run of a script stops (see ScriptOptions.dryRun). */
class DryRunStop extends ReturnSignal {}

type Transaction = OpenTransaction

/**
 * Interprets a query job's text as BigQuery runs a multi-statement query: DECLARE / SET, IF … ELSEIF … ELSE,
 * BEGIN … EXCEPTION WHEN ERROR THEN … END (with @@error), RAISE, RETURN, BEGIN / COMMIT / ROLLBACK TRANSACTION
 * (a failed or unfinished transaction restores every table it wrote; DDL before it stays), temporary tables for
 * the script's lifetime. Each query and DML statement is run by ZetaSQL (see StatementExecutor); DDL by
 * runDdl. The text is split by ZetaSQL's own script parser.
 */
export class ScriptInterpreter {
  readonly #executor: StatementExecutor
  readonly #zeta: ZetaSqlService

  constructor(zeta: ZetaSqlService, executor: StatementExecutor) {
    this.#zeta = zeta
    this.#executor = executor
  }

  /** Parses the text (a syntax error is BigQuery's `invalidQuery` with its position). */
  async parse(text: string): Promise<TreeNode[]> {
    try {
      return statementList(await this.#zeta.parseScript(text))
    } catch (error) {
      if (error instanceof ZetaSqlError && error.position)
        throw invalidQuery(`${error.message} at [${error.position.line}:${error.position.column}]`)
      throw error
    }
  }

  async run(text: string, store: TableStore, options: ScriptOptions): Promise<ScriptOutcome> {
    const statements = await this.parse(text)
    if (statements.length === 0) throw invalidQuery('The query is empty')
    const isScript = statements.length > 1 || PROCEDURAL.has(statements[0]!.kind)
    const run = new ScriptRun(this.#executor, store, Buffer.from(text), {
      ...options,
      stopsDryRun: options.dryRun === true && isScript,
    })
    // A dry run leaves a session as it was; a job leaves it what the script left (see ScriptOptions.session).
    const finish = (failed: boolean) => {
      if (options.session === undefined) run.abandonTransaction()
      else if (options.dryRun !== true) run.saveTo(options.session, failed)
    }
    try {
      await run.block(statements)
    } catch (error) {
      if (!(error instanceof ReturnSignal)) {
        finish(true)
        throw error
      }
    }
    finish(false)
    const single = statements[0]!
    return {
      isScript,
      statementType: isScript
        ? 'SCRIPT'
        : (STATEMENT_TYPES[single.kind] ?? run.lastDdl?.statementType ?? 'SCRIPT'),
      ...(run.lastResult === undefined ? {} : { result: run.lastResult }),
      bytesProcessed: run.bytesProcessed,
      statements: run.statementsRun,
      ...(run.rowCount === undefined ? {} : { dmlAffectedRows: run.rowCount }),
      ...(run.lastDdl === undefined ? {} : { ddl: run.lastDdl }),
    }
  }
}

/** The state of one script run: variables by block, temporary tables, the open transaction, @@error. */
interface RunOptions extends ScriptOptions {
  /** A dry run of a script: stops after the first DDL statement or at the first IF. */
  readonly stopsDryRun: boolean
}

class ScriptRun implements DdlScope {
  readonly store: TableStore
  readonly projectId: string
  readonly defaultDataset?: string
  readonly location?: string
  lastResult: QueryResult | undefined
  lastDdl: DdlOutcome | undefined
  rowCount: number | undefined
  bytesProcessed = 0
  statementsRun = 0
  readonly #executor: StatementExecutor
  readonly #source: Buffer
  readonly #options: RunOptions
  readonly #frames: Map<string, Variable>[]
  #temps: Map<string, StoredTable>
  #transaction: Transaction | undefined
  #error: { readonly error: BigQueryError; readonly statement: string; readonly at: string } | undefined

  constructor(executor: StatementExecutor, store: TableStore, source: Buffer, options: RunOptions) {
    this.#executor = executor
    this.store = store
    this.#source = source
    this.#options = options
    // A session's variables are the outermost frame: what a job declares at its top level stays for the next.
    this.#frames = [options.session?.variables ?? new Map()]
    this.#temps = options.session === undefined ? new Map() : new Map(options.session.temps)
    this.#transaction = options.session?.transaction
    this.projectId = options.projectId
    if (options.defaultDataset !== undefined) this.defaultDataset = options.defaultDataset
    if (options.location !== undefined) this.location = options.location
  }

  get inTransaction(): boolean {
    return this.#transaction !== undefined
  }

  // ---- StatementScope ----

  tempTable(name: string): StoredTable | undefined {
    return this.#temps.get(name.toLowerCase())
  }

  putTempTable(table: StoredTable): void {
    this.#temps.set(table.ref.tableId.toLowerCase(), table)
  }

  dropTempTable(name: string): boolean {
    return this.#temps.delete(name.toLowerCase())
  }

  variables(): Variable[] {
    const seen = new Map<string, Variable>()
    for (const frame of this.#frames) for (const [name, variable] of frame) seen.set(name, variable)
    return [...seen.values()]
  }

  systemVariable(path: readonly string[]): Variable | undefined {
    const name = path.join('.').toLowerCase()
    const string = (value: string | undefined): Variable => ({
      name,
      type: { typeKind: 'TYPE_STRING' },
      value: value === undefined ? NULL_VALUE : { stringValue: value },
    })
    switch (name) {
      case 'error.message':
        return string(this.#error?.error.message)
      case 'error.statement_text':
        return string(this.#error?.statement)
      case 'error.formatted_stack_trace':
        return string(this.#error === undefined ? undefined : `At ${this.#error.at}`)
      case 'row_count':
        return {
          name,
          type: { typeKind: 'TYPE_INT64' },
          value: this.rowCount === undefined ? NULL_VALUE : { int64Value: String(this.rowCount) },
        }
      case 'current_job_id':
      case 'script.job_id':
        return string(this.#options.jobId)
      case 'project_id':
        return string(this.projectId)
      case 'location':
        return string(this.location)
      case 'time_zone':
        return string('UTC')
      default:
        return undefined
    }
  }

  writeTable(table: StoredTable, temp: boolean): void {
    if (temp) {
      this.putTempTable(table)
      return
    }
    const key = tableKey(table.ref)
    if (this.#transaction !== undefined && !this.#transaction.originals.has(key))
      this.#transaction.originals.set(key, this.store.getTable(table.ref))
    this.store.putTable(table)
  }

  /** Leaves the session what this job leaves: its temporary tables and open transaction (rolled back if it failed). */
  saveTo(session: Session, failed: boolean): void {
    if (session.ended) return
    if (failed && this.#transaction !== undefined) this.#rollback()
    session.temps = this.#temps
    session.transaction = this.#transaction
  }

  /** A transaction still open when the script ends (or fails) is rolled back, as BigQuery does. */
  abandonTransaction(): void {
    if (this.#transaction !== undefined) this.#rollback()
  }

  // ---- statements ----

  async block(statements: readonly TreeNode[]): Promise<void> {
    for (const statement of statements) await this.#statement(statement)
  }

  async #statement(statement: TreeNode): Promise<void> {
    switch (statement.kind) {
      case 'astVariableDeclarationNode':
        return this.#declare(statement)
      case 'astSingleAssignmentNode':
        return this.#assign(statement)
      case 'astBeginEndBlockNode':
        return this.#beginEnd(statement)
      case 'astIfStatementNode':
        if (this.#options.stopsDryRun) throw new DryRunStop()
        return this.#if(statement)
      case 'astRaiseStatementNode':
        return this.#raise(statement)
      case 'astReturnStatementNode':
        throw new ReturnSignal()
      case 'astCallStatementNode':
        return this.#run(statement, async () => this.#call(statement))
      case 'astBeginStatementNode':
        return this.#run(statement, async () => this.#begin())
      case 'astCommitStatementNode':
        return this.#run(statement, async () => this.#commit())
      case 'astRollbackStatementNode':
        return this.#run(statement, async () => {
          if (this.#transaction === undefined)
            throw invalidQuery('ROLLBACK TRANSACTION: there is no active transaction')
          this.#rollback()
        })
      case 'astQueryStatementNode':
        return this.#run(statement, async (fragment) => {
          if (this.#options.dryRun) {
            this.bytesProcessed += await this.#executor.estimate(fragment, this)
            return
          }
          const result = await this.#executor.query(fragment, this)
          this.lastResult = result
          this.bytesProcessed += result.bytesProcessed
        })
      default:
        if (isDml(statement.kind))
          return this.#run(statement, async (fragment) => {
            if (this.#options.dryRun) {
              this.bytesProcessed += await this.#executor.estimate(fragment, this)
              return
            }
            const result = await this.#executor.modify(fragment, this)
            this.rowCount = result.affectedRows
            this.bytesProcessed += result.bytesProcessed
          })
        if (isDdl(statement.kind))
          return this.#run(statement, async (fragment) => {
            this.lastDdl = await runDdl(this.#executor, fragment, this)
            this.bytesProcessed += this.lastDdl.bytesProcessed
            if (this.#options.stopsDryRun) throw new DryRunStop()
          })
        throw invalidQuery(
          `The BigQuery emulator does not run ${statement.kind.replace(/^ast|Node$/g, '')} statements${this.#at(statement.start)}`,
        )
    }
  }

  /** Runs one statement of the script, after the fault hook, translating failures to BigQuery errors. */
  async #run(statement: TreeNode, body: (fragment: Fragment) => Promise<void>): Promise<void> {
    this.statementsRun++
    try {
      this.#options.beforeStatement?.({
        jobId: this.#options.jobId,
        kind: statement.kind,
        text: this.#text(statement),
      })
      await body({ source: this.#source, node: statement })
    } catch (error) {
      this.#noteFailure(statement)
      throw error
    }
  }

  /** `CALL BQ.ABORT_SESSION()`: ends the job's session, rolling back its open transaction; no other procedure. */
  async #call(statement: TreeNode): Promise<void> {
    if (!/^CALL\s+BQ\s*\.\s*ABORT_SESSION\s*\(\s*\)\s*$/i.test(this.#text(statement)))
      throw invalidQuery(`The BigQuery emulator does not run CALL statements${this.#at(statement.start)}`)
    const session = this.#options.session
    if (session === undefined)
      throw invalidQuery(`BQ.ABORT_SESSION can only be called in a session${this.#at(statement.start)}`)
    if (this.#options.dryRun === true) return
    if (this.#transaction !== undefined) this.#rollback()
    this.#temps = new Map()
    session.transaction = undefined
    session.temps = new Map()
    session.ended = true
  }

  async #declare(statement: TreeNode): Promise<void> {
    const names = childList(child(statement, 'variableList') ?? statement, 'identifierList').map((n) =>
      String(n.fields.idString),
    )
    const typeNode = child(statement, 'type')
    const defaultNode = child(statement, 'defaultValue')
    let variable: Variable
    if (defaultNode !== undefined) {
      variable = await this.#evaluate(defaultNode)
      if (typeNode !== undefined)
        variable = await this.#coerce(variable, await this.#typeOf(typeNode), statement)
    } else if (typeNode !== undefined) {
      variable = { name: '', type: await this.#typeOf(typeNode), value: NULL_VALUE }
    } else {
      throw invalidQuery(`DECLARE needs a type or a DEFAULT value${this.#at(statement.start)}`)
    }
    const frame = this.#frames.at(-1)!
    for (const name of names) {
      const key = name.toLowerCase()
      if (this.#frames.some((f) => f.has(key)))
        throw invalidQuery(`Variable ${name} is already declared${this.#at(statement.start)}`)
      frame.set(key, { ...variable, name })
    }
  }

  async #assign(statement: TreeNode): Promise<void> {
    const name = String(child(statement, 'variable')?.fields.idString ?? '')
    const frame = [...this.#frames].reverse().find((f) => f.has(name.toLowerCase()))
    const current = frame?.get(name.toLowerCase())
    if (frame === undefined || current === undefined)
      throw invalidQuery(`Undeclared variable: ${name}${this.#at(statement.start)}`)
    const value = await this.#coerce(
      await this.#evaluate(child(statement, 'expression')!),
      current.type,
      statement,
    )
    frame.set(name.toLowerCase(), { ...value, name: current.name })
  }

  async #beginEnd(statement: TreeNode): Promise<void> {
    const handler = childList(child(statement, 'handlerList') ?? statement, 'exceptionHandlerList')[0]
    const depth = this.#frames.length
    this.#frames.push(new Map())
    try {
      await this.block(statementList(statement))
    } catch (error) {
      if (handler === undefined || !(error instanceof BigQueryError)) throw error
      // Variables of the block are out of scope in its handler.
      this.#frames.length = depth
      const outer = this.#error
      this.#error = { error, statement: this.#failedStatement ?? '', at: this.#failedAt ?? '' }
      this.#frames.push(new Map())
      try {
        await this.block(statementList(treeNode(handler.fields.statementList) ?? handler))
      } finally {
        this.#error = outer
      }
    } finally {
      this.#frames.length = depth
    }
  }

  async #if(statement: TreeNode): Promise<void> {
    const branches: { condition: TreeNode; body: TreeNode | undefined }[] = [
      { condition: child(statement, 'condition')!, body: child(statement, 'thenList') },
      ...childList(child(statement, 'elseifClauses') ?? statement, 'elseifClauses').map((clause) => ({
        condition: child(clause, 'condition')!,
        body: child(clause, 'body'),
      })),
    ]
    for (const branch of branches) {
      const value = await this.#evaluate(branch.condition)
      if (value.type.typeKind !== 'TYPE_BOOL')
        throw invalidQuery(
          `IF condition must be BOOL, not ${typeText(value.type)}${this.#at(branch.condition.start)}`,
        )
      if (!isNull(value.value) && value.value.boolValue === true) {
        if (branch.body !== undefined) await this.#scoped(statementList(branch.body))
        return
      }
    }
    const otherwise = child(statement, 'elseList')
    if (otherwise !== undefined) await this.#scoped(statementList(otherwise))
  }

  async #raise(statement: TreeNode): Promise<void> {
    const messageNode = child(statement, 'message')
    if (messageNode === undefined) {
      if (this.#error === undefined)
        throw invalidQuery(`RAISE without a message outside an exception handler${this.#at(statement.start)}`)
      throw this.#error.error
    }
    const message = await this.#evaluate(messageNode)
    const text = isNull(message.value)
      ? 'NULL'
      : String(message.value.stringValue ?? message.value.int64Value ?? '')
    this.#noteFailure(statement)
    throw new BigQueryError('invalidQuery', text, 'query')
  }

  async #scoped(statements: readonly TreeNode[]): Promise<void> {
    const depth = this.#frames.length
    this.#frames.push(new Map())
    try {
      await this.block(statements)
    } finally {
      this.#frames.length = depth
    }
  }

  // ---- transactions ----

  #begin(): void {
    if (this.#transaction !== undefined)
      throw invalidQuery('BEGIN TRANSACTION: a transaction is already active; transactions cannot be nested')
    this.#transaction = { originals: new Map(), temps: new Map(this.#temps) }
  }

  #commit(): void {
    if (this.#transaction === undefined)
      throw invalidQuery('COMMIT TRANSACTION: there is no active transaction')
    this.#transaction = undefined
  }

  #rollback(): void {
    const transaction = this.#transaction!
    for (const [key, original] of transaction.originals) this.store.restoreTable(key, original)
    this.#temps = new Map(transaction.temps)
    this.#transaction = undefined
  }

  // ---- expressions and types ----

  async #evaluate(expression: TreeNode): Promise<Variable> {
    try {
      return await this.#executor.expression({ source: this.#source, node: expression }, this)
    } catch (error) {
      this.#noteFailure(expression)
      throw error
    }
  }

  async #typeOf(typeNode: TreeNode): Promise<Proto> {
    const body = await this.#executor.parseBody(`SELECT CAST(NULL AS ${this.#text(typeNode)})`)
    const result = await this.#executor.query(body, this)
    return result.columns[0]!.type
  }

  /** BigQuery coerces a value to a variable's type only along widening numeric conversions (and NULL). */
  async #coerce(value: Variable, type: Proto, statement: TreeNode): Promise<Variable> {
    const from = typeText(value.type)
    const to = typeText(type)
    if (from === to) return { ...value, type }
    if (isNull(value.value)) return { name: value.name, type, value: NULL_VALUE }
    const widening: Record<string, readonly string[]> = {
      INT64: ['NUMERIC', 'BIGNUMERIC', 'FLOAT64'],
      NUMERIC: ['BIGNUMERIC', 'FLOAT64'],
      BIGNUMERIC: ['FLOAT64'],
    }
    if (!(widening[from] ?? []).includes(to))
      throw invalidQuery(`Cannot coerce expression of type ${from} to type ${to}${this.#at(statement.start)}`)
    const body = await this.#executor.parseBody(`SELECT CAST(\`__emulator_value\` AS ${to})`)
    const result = await this.#executor.query(
      body,
      withVariables(this, [{ ...value, name: '__emulator_value' }]),
    )
    return { name: value.name, type, value: result.rows[0]?.[0] ?? NULL_VALUE }
  }

  // ---- positions ----

  #failedStatement: string | undefined
  #failedAt: string | undefined

  #noteFailure(node: TreeNode): void {
    this.#failedStatement = this.#text(node)
    const { line, column } = lineAndColumn(this.#source, node.start)
    this.#failedAt = `${line}:${column}`
  }

  #text(node: TreeNode): string {
    return this.#source.subarray(node.start, node.end).toString('utf8')
  }

  #at(offset: number): string {
    const { line, column } = lineAndColumn(this.#source, offset)
    return ` at [${line}:${column}]`
  }
}
