/**
 * A small interpreter for the subset of the Amazon States Language (JSONata query language) that the dimsync
 * state machine uses, so tests can run the synthesized definition against the real functions. There is no Step
 * Functions emulator in this project: this is a simulation, and it says so. Every `{% ... %}` expression is
 * evaluated by the real `jsonata` library (the devDependency's version; Step Functions documents 2.0.6);
 * everything around it follows the Step Functions documentation:
 *
 * - States: Pass (Assign, Output), Choice (Choices with Condition and Next, Default), Task (Arguments, Assign,
 *   Output, Retry, Catch with Assign/Output), Succeed (Output), Fail (Error, Cause, literal or JSONata).
 * - Assign is evaluated against the values the variables had when the state was entered (every expression of
 *   one Assign sees the same snapshot) and applied when the state is left; a Task's Assign and Output see
 *   `$states.result`, a Catch's see `$states.errorOutput` (the state's own Assign/Output are then not applied).
 * - `$states.input`, `$states.result`, `$states.errorOutput` ({ Error, Cause }) and `$states.context`
 *   (Execution.{Id, Input, Name, StartTime}, StateMachine.{Id, Name}, State.{Name, EnteredTime, RetryCount}).
 * - An expression that evaluates to nothing (undefined) fails its state with States.QueryEvaluationError, as in
 *   Step Functions; so does a JSONata error or a Condition that is not a boolean.
 * - Retry: the first retrier whose ErrorEquals names the error (or States.ALL) decides; it retries while its
 *   own attempt count is below MaxAttempts (default 3; 0 never retries), then the error goes to Catch. Waits
 *   (IntervalSeconds, BackoffRate, MaxDelaySeconds, JitterStrategy) are accepted and not slept: attempts are
 *   counted and recorded. Errors of the resource or of Arguments go through Retry then Catch; an error in a
 *   Task's Assign/Output after the call succeeded only through Catch; States.ALL never matches States.Runtime.
 *   A Choice with no matching rule and no Default fails with States.NoChoiceMatched.
 * - Resources: `arn:aws:states:::lambda:invoke` calls the `invoke` callback with FunctionName and the Payload
 *   (both through JSON, as Lambda serializes them) and answers `{ ExecutedVersion, Payload, StatusCode }`; an
 *   error the callback throws becomes `{ Error: error.name, Cause: error.message }` (simplified: Lambda's real
 *   Cause is a JSON document with errorMessage, errorType and trace). `aws-sdk:cloudwatch:putMetricData`,
 *   `aws-sdk:cloudwatch:getMetricData`, `aws-sdk:scheduler:getSchedule`, `aws-sdk:s3:listObjectsV2` and
 *   `sns:publish` are recorded and answer
 *   `{}` (or what the optional `callService` hook returns or throws).
 *
 * It refuses (`JsonataStateMachine.load` throws UnsupportedDefinitionError) anything else rather than skipping it: other
 * state types or fields, JSONPath, other resources, `States.*` error names other than States.ALL, the JSONata
 * functions Step Functions adds ($partition, $range, $hash, $random, $uuid, $parse) and $eval (disabled by Step
 * Functions), expressions reading the JSONata context `$`/`$$` or a bare field, `$states` fields where Step
 * Functions does not provide them, and references to variables no state assigns (a typo would otherwise read
 * as nothing). The top-level TimeoutSeconds is accepted and not enforced (tests finish long before it).
 */
import jsonata from 'jsonata'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** The definition uses something this interpreter does not implement (or that Step Functions rejects). */
export class UnsupportedDefinitionError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UnsupportedDefinitionError'
  }
}

export interface StateMachineDefinition {
  readonly StartAt: string
  readonly States: Record<string, Record<string, unknown>>
  readonly QueryLanguage?: string
  readonly Comment?: string
  readonly TimeoutSeconds?: number
}

export const LAMBDA_INVOKE = 'arn:aws:states:::lambda:invoke'
export const PUT_METRIC_DATA = 'arn:aws:states:::aws-sdk:cloudwatch:putMetricData'
export const SNS_PUBLISH = 'arn:aws:states:::sns:publish'
export const GET_METRIC_DATA = 'arn:aws:states:::aws-sdk:cloudwatch:getMetricData'
export const GET_SCHEDULE = 'arn:aws:states:::aws-sdk:scheduler:getSchedule'
export const LIST_OBJECTS = 'arn:aws:states:::aws-sdk:s3:listObjectsV2'
const RECORDED_RESOURCES: readonly string[] = [
  PUT_METRIC_DATA,
  SNS_PUBLISH,
  GET_METRIC_DATA,
  GET_SCHEDULE,
  LIST_OBJECTS,
]

/** Calls the Lambda function (the real handler in tests); throw to fail the invocation. */
export type LambdaInvoker = (functionName: string, payload: Json) => Promise<unknown>

export interface ServiceCall {
  readonly state: string
  readonly resource: string
  readonly arguments: Json
}

export interface LambdaInvocation {
  readonly state: string
  readonly functionName: string
  readonly payload: Json
  /** 1 for the first call of a state visit, 2 for its first retry, ... */
  readonly attempt: number
  readonly result?: Json
  readonly error?: ErrorOutput
}

export interface ErrorOutput {
  readonly Error: string
  readonly Cause: string
}

export interface RunOptions {
  readonly input: Json
  readonly invoke: LambdaInvoker
  /** Answers a recorded service call (default `{}`); throw to fail it. */
  readonly callService?: (call: ServiceCall) => unknown
  readonly executionName?: string
  readonly clock?: () => Date
  /** Guard against a definition that never ends (default 500 state transitions). */
  readonly maxTransitions?: number
}

export interface ExecutionResult {
  readonly status: 'SUCCEEDED' | 'FAILED'
  readonly output?: Json
  readonly error?: string
  readonly cause?: string
  /** State names in the order they were entered. */
  readonly visited: readonly string[]
  /** Every Lambda invocation, retries included. */
  readonly invocations: readonly LambdaInvocation[]
  /** putMetricData and sns:publish calls, with their evaluated arguments. */
  readonly calls: readonly ServiceCall[]
  /** The workflow variables when the execution ended. */
  readonly variables: Readonly<Record<string, Json>>
}

const SIMULATED_ACCOUNT = 'arn:aws:states:us-east-1:123456789012'
const STATES_ALL = 'States.ALL'
const QUERY_EVALUATION_ERROR = 'States.QueryEvaluationError'
/** Functions Step Functions adds to JSONata; none is implemented here, so a definition using one is refused. */
const STEP_FUNCTIONS_FUNCTIONS = ['partition', 'range', 'hash', 'random', 'uuid', 'parse']
const DISABLED_FUNCTIONS = ['eval']

const COMMON_FIELDS = ['Type', 'Comment', 'QueryLanguage']
const STATE_FIELDS: Record<string, readonly string[]> = {
  Pass: [...COMMON_FIELDS, 'Next', 'End', 'Assign', 'Output'],
  Task: [...COMMON_FIELDS, 'Next', 'End', 'Resource', 'Arguments', 'Assign', 'Output', 'Retry', 'Catch'],
  Choice: [...COMMON_FIELDS, 'Choices', 'Default'],
  Succeed: [...COMMON_FIELDS, 'Output'],
  Fail: [...COMMON_FIELDS, 'Error', 'Cause'],
}
const TOP_LEVEL_FIELDS = ['StartAt', 'States', 'QueryLanguage', 'Comment', 'TimeoutSeconds']
const RETRIER_FIELDS = [
  'ErrorEquals',
  'MaxAttempts',
  'IntervalSeconds',
  'BackoffRate',
  'MaxDelaySeconds',
  'JitterStrategy',
  'Comment',
]
const CATCHER_FIELDS = ['ErrorEquals', 'Next', 'Assign', 'Output', 'Comment']
const RULE_FIELDS = ['Condition', 'Next', 'Comment']
const LAMBDA_ARGUMENTS = ['FunctionName', 'Payload']

/** Which `$states` fields a template may read, by where it is written. */
type Scope = 'input' | 'result' | 'errorOutput'

interface Template {
  readonly state: string
  readonly field: string
  readonly value: unknown
  readonly scope: Scope
}

/** A failure inside the execution (matched against Retry and Catch), as opposed to a bug in the definition. */
class StatesFailure extends Error {
  constructor(
    readonly error: string,
    override readonly cause: string,
  ) {
    super(`${error}: ${cause}`)
  }
  get output(): ErrorOutput {
    return { Error: this.error, Cause: this.cause }
  }
}

type Retrier = { ErrorEquals: string[]; MaxAttempts?: number }
type Catcher = { ErrorEquals: string[]; Next: string; Assign?: Record<string, unknown>; Output?: unknown }
type ChoiceRule = { Condition: string; Next: string }

export class JsonataStateMachine {
  readonly #definition: StateMachineDefinition
  readonly #compiled = new Map<string, jsonata.Expression>()
  #warnings: readonly string[] = []
  /** Names executions started without one: deterministic, so a failing run replays. */
  #executions = 0

  /** Validates the whole definition up front; throws UnsupportedDefinitionError for anything not simulated. */
  static async load(definition: StateMachineDefinition): Promise<JsonataStateMachine> {
    const machine = new JsonataStateMachine(definition)
    machine.#warnings = await machine.#checkExpressions()
    return machine
  }

  private constructor(definition: StateMachineDefinition) {
    this.#definition = definition
    this.#checkStructure()
  }

  /** Variables some state assigns that have the name of a JSONata function the definition calls. */
  get warnings(): readonly string[] {
    return this.#warnings
  }

  get definition(): StateMachineDefinition {
    return this.#definition
  }

  async run(options: RunOptions): Promise<ExecutionResult> {
    const clock = options.clock ?? (() => new Date())
    const name = options.executionName ?? `simulated-${String(++this.#executions).padStart(8, '0')}`
    const machineName = 'simulated'
    const executionInput = toJson(options.input, 'execution input')
    const execution = {
      Id: `${SIMULATED_ACCOUNT}:execution:${machineName}:${name}`,
      Input: executionInput,
      Name: name,
      StartTime: clock().toISOString(),
    }
    const stateMachine = { Id: `${SIMULATED_ACCOUNT}:stateMachine:${machineName}`, Name: machineName }
    const variables: Record<string, Json> = {}
    const visited: string[] = []
    const invocations: LambdaInvocation[] = []
    const calls: ServiceCall[] = []
    const finish = (
      end: Pick<ExecutionResult, 'status' | 'output' | 'error' | 'cause'>,
    ): ExecutionResult => ({
      ...end,
      visited,
      invocations,
      calls,
      variables: structuredClone(variables),
    })

    let current = this.#definition.StartAt
    let input: Json = structuredClone(executionInput)
    const limit = options.maxTransitions ?? 500
    for (let transitions = 0; ; transitions++) {
      if (transitions >= limit) {
        throw new Error(`simulated execution ${name} did not end after ${limit} states (visited: ${visited})`)
      }
      const state = this.#definition.States[current]!
      visited.push(current)
      const enteredTime = clock().toISOString()
      const context = (retryCount: number): Json => ({
        Execution: execution,
        StateMachine: stateMachine,
        State: { Name: current, EnteredTime: enteredTime, RetryCount: retryCount },
      })
      const scope = (retryCount: number, extra: Record<string, Json> = {}) =>
        ({ input, context: context(retryCount), ...extra }) as Record<string, Json>
      const stateName = current
      const evaluate = (value: unknown, field: string, states: Record<string, Json>) =>
        this.#template(value, field, states, variables, stateName)
      try {
        switch (state.Type) {
          case 'Pass': {
            const states = scope(0)
            const assigned = await this.#assign(state.Assign, 'Assign', states, variables, stateName)
            const output = state.Output === undefined ? input : await evaluate(state.Output, 'Output', states)
            Object.assign(variables, assigned)
            if (state.End === true) return finish({ status: 'SUCCEEDED', output })
            current = state.Next as string
            input = output
            break
          }
          case 'Choice': {
            const states = scope(0)
            const rules = state.Choices as ChoiceRule[]
            let next = state.Default as string | undefined
            for (const [i, rule] of rules.entries()) {
              const field = `Choices[${i}]/Condition`
              const matched = await evaluate(rule.Condition, field, states)
              if (typeof matched !== 'boolean') {
                throw new StatesFailure(
                  QUERY_EVALUATION_ERROR,
                  `The JSONata expression specified for the field '${field}' returned ${JSON.stringify(matched)}, not a boolean.`,
                )
              }
              if (matched) {
                next = rule.Next
                break
              }
            }
            if (next === undefined) {
              throw new StatesFailure(
                'States.NoChoiceMatched',
                `no rule of Choice state ${stateName} matched`,
              )
            }
            current = next
            break
          }
          case 'Succeed': {
            const output =
              state.Output === undefined ? input : await evaluate(state.Output, 'Output', scope(0))
            return finish({ status: 'SUCCEEDED', output })
          }
          case 'Fail': {
            const states = scope(0)
            const error = state.Error === undefined ? undefined : await evaluate(state.Error, 'Error', states)
            const cause = state.Cause === undefined ? undefined : await evaluate(state.Cause, 'Cause', states)
            for (const [field, value] of [
              ['Error', error],
              ['Cause', cause],
            ] as const) {
              if (value !== undefined && typeof value !== 'string') {
                throw new StatesFailure(
                  QUERY_EVALUATION_ERROR,
                  `The field '${field}' of Fail state ${stateName} evaluated to ${JSON.stringify(value)}, not a string.`,
                )
              }
            }
            return finish({
              status: 'FAILED',
              ...(error !== undefined ? { error: error as string } : {}),
              ...(cause !== undefined ? { cause: cause as string } : {}),
            })
          }
          case 'Task': {
            const retriers = (state.Retry as Retrier[] | undefined) ?? []
            const retried = retriers.map(() => 0)
            let outcome: { output: Json; assigned: Record<string, Json> } | StatesFailure
            for (let attempt = 1; ; attempt++) {
              const states = scope(attempt - 1)
              try {
                const args = await evaluate(state.Arguments ?? {}, 'Arguments', states)
                const result = await this.#callResource(stateName, state.Resource as string, args, attempt, {
                  invoke: options.invoke,
                  callService: options.callService,
                  invocations,
                  calls,
                })
                const withResult = { ...states, result }
                try {
                  const assigned = await this.#assign(
                    state.Assign,
                    'Assign',
                    withResult,
                    variables,
                    stateName,
                  )
                  const output =
                    state.Output === undefined ? result : await evaluate(state.Output, 'Output', withResult)
                  outcome = { output, assigned }
                } catch (error) {
                  // Assign/Output failed after the task succeeded: caught, never retried (the task is done).
                  if (!(error instanceof StatesFailure)) throw error
                  outcome = error
                }
                break
              } catch (error) {
                if (!(error instanceof StatesFailure)) throw error
                const index = retriers.findIndex((r) => matches(r.ErrorEquals, error.error))
                const retrier = retriers[index]
                if (retrier !== undefined && retried[index]! < (retrier.MaxAttempts ?? 3)) {
                  retried[index]!++
                  continue
                }
                outcome = error
                break
              }
            }
            if (!(outcome instanceof StatesFailure)) {
              Object.assign(variables, outcome.assigned)
              if (state.End === true) return finish({ status: 'SUCCEEDED', output: outcome.output })
              current = state.Next as string
              input = outcome.output
              break
            }
            const failure = outcome
            const catchers = (state.Catch as Catcher[] | undefined) ?? []
            const index = catchers.findIndex((c) => matches(c.ErrorEquals, failure.error))
            const catcher = catchers[index]
            if (catcher === undefined) throw failure
            const states = scope(0, { errorOutput: failure.output as unknown as Json })
            const prefix = `Catch[${index}]`
            const assigned = await this.#assign(
              catcher.Assign,
              `${prefix}/Assign`,
              states,
              variables,
              stateName,
            )
            const output =
              catcher.Output === undefined
                ? (failure.output as unknown as Json)
                : await evaluate(catcher.Output, `${prefix}/Output`, states)
            Object.assign(variables, assigned)
            current = catcher.Next
            input = output
            break
          }
          default:
            throw new UnsupportedDefinitionError(`state ${stateName}: type ${String(state.Type)}`)
        }
      } catch (error) {
        if (!(error instanceof StatesFailure)) throw error
        return finish({ status: 'FAILED', error: error.error, cause: error.cause })
      }
    }
  }

  async #callResource(
    state: string,
    resource: string,
    args: Json,
    attempt: number,
    run: {
      invoke: LambdaInvoker
      callService: RunOptions['callService']
      invocations: LambdaInvocation[]
      calls: ServiceCall[]
    },
  ): Promise<Json> {
    if (resource === LAMBDA_INVOKE) {
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        throw new StatesFailure('States.Runtime', `state ${state}: lambda:invoke Arguments must be an object`)
      }
      const unknown = Object.keys(args).filter((k) => !LAMBDA_ARGUMENTS.includes(k))
      if (unknown.length > 0) {
        throw new UnsupportedDefinitionError(`state ${state}: lambda:invoke arguments ${unknown.join(', ')}`)
      }
      const functionName = args.FunctionName
      if (typeof functionName !== 'string') {
        throw new StatesFailure('States.Runtime', `state ${state}: FunctionName is not a string`)
      }
      const payload = toJson(args.Payload ?? null, `${state} Payload`)
      try {
        const returned = await run.invoke(functionName, structuredClone(payload))
        const result = toJson(returned ?? null, `${state} Payload returned by ${functionName}`)
        run.invocations.push({ state, functionName, payload, attempt, result })
        return { ExecutedVersion: '$LATEST', Payload: result, StatusCode: 200 }
      } catch (error) {
        const failure = asFailure(error)
        run.invocations.push({ state, functionName, payload, attempt, error: failure.output })
        throw failure
      }
    }
    if (RECORDED_RESOURCES.includes(resource)) {
      const call: ServiceCall = { state, resource, arguments: args }
      run.calls.push(call)
      if (run.callService === undefined) return {}
      try {
        return toJson((await run.callService(call)) ?? {}, `${state} result`)
      } catch (error) {
        throw asFailure(error)
      }
    }
    throw new UnsupportedDefinitionError(`state ${state}: resource ${resource}`)
  }

  /** Evaluates an Assign block against the variables as they are now; the caller applies the result. */
  async #assign(
    assign: unknown,
    field: string,
    states: Record<string, Json>,
    variables: Record<string, Json>,
    state: string,
  ): Promise<Record<string, Json>> {
    if (assign === undefined) return {}
    const values: Record<string, Json> = {}
    for (const [name, value] of Object.entries(assign as Record<string, unknown>)) {
      values[name] = await this.#template(value, `${field}/${name}`, states, variables, state)
    }
    return values
  }

  /** A JSON value whose strings may be `{% expression %}` (at any depth), evaluated with the real JSONata. */
  async #template(
    value: unknown,
    field: string,
    states: Record<string, Json>,
    variables: Record<string, Json>,
    state: string,
  ): Promise<Json> {
    if (Array.isArray(value)) {
      const items: Json[] = []
      for (const [i, item] of value.entries())
        items.push(await this.#template(item, `${field}[${i}]`, states, variables, state))
      return items
    }
    if (typeof value === 'object' && value !== null) {
      const object: Record<string, Json> = {}
      for (const [key, item] of Object.entries(value))
        object[key] = await this.#template(item, `${field}/${key}`, states, variables, state)
      return object
    }
    const expression = expressionOf(value)
    if (expression === undefined) return value as Json
    const compiled = this.#compile(expression, field)
    let result: unknown
    try {
      result = await compiled.evaluate(undefined, { ...variables, states })
    } catch (error) {
      const e = error as { code?: string; message?: string }
      throw new StatesFailure(
        QUERY_EVALUATION_ERROR,
        `An error occurred while executing the state '${state}'. The JSONata expression '${expression}' specified for the field '${field}' failed: ${e.code ?? ''} ${e.message ?? String(error)}`,
      )
    }
    if (result === undefined) {
      throw new StatesFailure(
        QUERY_EVALUATION_ERROR,
        `An error occurred while executing the state '${state}'. The JSONata expression '${expression}' specified for the field '${field}' returned nothing (undefined).`,
      )
    }
    try {
      return toJson(result, field)
    } catch (error) {
      throw new StatesFailure(QUERY_EVALUATION_ERROR, (error as Error).message)
    }
  }

  #compile(expression: string, field: string): jsonata.Expression {
    let compiled = this.#compiled.get(expression)
    if (compiled === undefined) {
      try {
        compiled = jsonata(expression)
      } catch (error) {
        throw new UnsupportedDefinitionError(
          `${field}: JSONata syntax error in '${expression}': ${(error as Error).message}`,
        )
      }
      this.#compiled.set(expression, compiled)
    }
    return compiled
  }

  /** States, fields, transitions, retriers, catchers and resources: refuse anything not simulated. */
  #checkStructure(): void {
    const d = this.#definition
    refuseUnknown('the definition', d as unknown as Record<string, unknown>, TOP_LEVEL_FIELDS)
    if (d.QueryLanguage !== 'JSONata') {
      throw new UnsupportedDefinitionError(
        `QueryLanguage ${String(d.QueryLanguage)} (only JSONata is simulated)`,
      )
    }
    const names = Object.keys(d.States)
    const target = (from: string, next: unknown) => {
      if (typeof next !== 'string' || !names.includes(next)) {
        throw new UnsupportedDefinitionError(`state ${from}: transition to unknown state ${String(next)}`)
      }
    }
    target('StartAt', d.StartAt)
    for (const [name, state] of Object.entries(d.States)) {
      const type = String(state.Type)
      const fields = STATE_FIELDS[type]
      if (fields === undefined) throw new UnsupportedDefinitionError(`state ${name}: type ${type}`)
      refuseUnknown(`state ${name}`, state, fields)
      if (state.QueryLanguage !== undefined && state.QueryLanguage !== 'JSONata') {
        throw new UnsupportedDefinitionError(`state ${name}: QueryLanguage ${String(state.QueryLanguage)}`)
      }
      if (type === 'Pass' || type === 'Task') {
        if ((state.Next === undefined) === (state.End !== true)) {
          throw new UnsupportedDefinitionError(`state ${name}: needs exactly one of Next or End: true`)
        }
        if (state.Next !== undefined) target(name, state.Next)
      }
      if (state.Assign !== undefined) checkAssign(`state ${name}`, state.Assign)
      if (type === 'Choice') {
        const rules = state.Choices
        if (!Array.isArray(rules) || rules.length === 0) {
          throw new UnsupportedDefinitionError(`state ${name}: Choices must be a non-empty array`)
        }
        for (const [i, rule] of rules.entries()) {
          refuseUnknown(`state ${name} Choices[${i}]`, rule as Record<string, unknown>, RULE_FIELDS)
          if (expressionOf((rule as ChoiceRule).Condition) === undefined) {
            throw new UnsupportedDefinitionError(`state ${name} Choices[${i}]: Condition must be {% ... %}`)
          }
          target(name, (rule as ChoiceRule).Next)
        }
        if (state.Default !== undefined) target(name, state.Default)
      }
      if (type === 'Task') {
        const resource = String(state.Resource)
        if (resource !== LAMBDA_INVOKE && !RECORDED_RESOURCES.includes(resource)) {
          throw new UnsupportedDefinitionError(`state ${name}: resource ${resource}`)
        }
        const args = state.Arguments
        if (resource === LAMBDA_INVOKE && typeof args === 'object' && args !== null && !Array.isArray(args)) {
          refuseUnknown(`state ${name} Arguments`, args as Record<string, unknown>, LAMBDA_ARGUMENTS)
        }
        const retriers = (state.Retry ?? []) as Record<string, unknown>[]
        for (const [i, retrier] of retriers.entries()) {
          refuseUnknown(`state ${name} Retry[${i}]`, retrier, RETRIER_FIELDS)
          checkErrorEquals(`state ${name} Retry[${i}]`, retrier.ErrorEquals, i === retriers.length - 1)
          const max = retrier.MaxAttempts
          if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 0)) {
            throw new UnsupportedDefinitionError(`state ${name} Retry[${i}]: MaxAttempts ${String(max)}`)
          }
        }
        const catchers = (state.Catch ?? []) as Record<string, unknown>[]
        for (const [i, catcher] of catchers.entries()) {
          refuseUnknown(`state ${name} Catch[${i}]`, catcher, CATCHER_FIELDS)
          checkErrorEquals(`state ${name} Catch[${i}]`, catcher.ErrorEquals, i === catchers.length - 1)
          target(name, catcher.Next)
          if (catcher.Assign !== undefined) checkAssign(`state ${name} Catch[${i}]`, catcher.Assign)
        }
      }
    }
  }

  /** Every template: it compiles, calls only simulated functions, reads only what exists where it is written. */
  async #checkExpressions(): Promise<string[]> {
    const templates = this.#templates()
    const assigned = new Set<string>()
    for (const state of Object.values(this.#definition.States)) {
      for (const name of Object.keys((state.Assign as object | undefined) ?? {})) assigned.add(name)
      for (const catcher of (state.Catch ?? []) as Catcher[])
        for (const name of Object.keys(catcher.Assign ?? {})) assigned.add(name)
    }
    const called = new Set<string>()
    const builtins = new Map<string, boolean>()
    const isBuiltin = async (name: string) => {
      if (!builtins.has(name))
        builtins.set(name, (await jsonata(`$type($${name})`).evaluate(undefined)) === 'function')
      return builtins.get(name)!
    }
    for (const t of templates) {
      const where = `state ${t.state} ${t.field}`
      const expression = expressionOf(t.value)
      if (expression === undefined) {
        if (typeof t.value === 'string' && (t.value.includes('{%') || t.value.includes('%}'))) {
          throw new UnsupportedDefinitionError(`${where}: '${t.value}' is not a whole {% ... %} expression`)
        }
        continue
      }
      const usage = analyse(this.#compile(expression, where).ast())
      if (usage.readsContext) {
        throw new UnsupportedDefinitionError(
          `${where}: '${expression}' reads the JSONata context ($, $$ or a bare field name); use $states.input`,
        )
      }
      for (const fn of usage.functions) {
        if (STEP_FUNCTIONS_FUNCTIONS.includes(fn) || DISABLED_FUNCTIONS.includes(fn)) {
          throw new UnsupportedDefinitionError(`${where}: function $${fn} is not simulated`)
        }
        called.add(fn)
      }
      for (const field of usage.states) {
        const allowed = ['input', 'context', ...(t.scope === 'input' ? [] : [t.scope])]
        if (!allowed.includes(field)) {
          throw new UnsupportedDefinitionError(`${where}: $states.${field} is not available there`)
        }
      }
      for (const name of usage.variables) {
        if (name === 'states' || usage.local.has(name) || assigned.has(name)) continue
        if (await isBuiltin(name)) continue
        throw new UnsupportedDefinitionError(`${where}: variable $${name} is never assigned`)
      }
    }
    const warnings: string[] = []
    for (const name of [...assigned].sort()) {
      if (called.has(name)) {
        warnings.push(`variable $${name} shadows the JSONata function $${name}() once assigned`)
      }
    }
    return warnings
  }

  #templates(): Template[] {
    const out: Template[] = []
    const add = (state: string, field: string, value: unknown, scope: Scope) => {
      if (Array.isArray(value)) value.forEach((v, i) => add(state, `${field}[${i}]`, v, scope))
      else if (typeof value === 'object' && value !== null)
        for (const [k, v] of Object.entries(value)) add(state, `${field}/${k}`, v, scope)
      else out.push({ state, field, value, scope })
    }
    for (const [name, state] of Object.entries(this.#definition.States)) {
      const after: Scope = state.Type === 'Task' ? 'result' : 'input'
      if (state.Arguments !== undefined) add(name, 'Arguments', state.Arguments, 'input')
      if (state.Assign !== undefined) add(name, 'Assign', state.Assign, after)
      if (state.Output !== undefined) add(name, 'Output', state.Output, after)
      for (const field of ['Error', 'Cause'] as const)
        if (state[field] !== undefined) add(name, field, state[field], 'input')
      for (const [i, rule] of ((state.Choices ?? []) as ChoiceRule[]).entries())
        add(name, `Choices[${i}]/Condition`, rule.Condition, 'input')
      for (const [i, catcher] of ((state.Catch ?? []) as Catcher[]).entries()) {
        if (catcher.Assign !== undefined) add(name, `Catch[${i}]/Assign`, catcher.Assign, 'errorOutput')
        if (catcher.Output !== undefined) add(name, `Catch[${i}]/Output`, catcher.Output, 'errorOutput')
      }
    }
    return out
  }
}

/**
 * The Step Functions definition of a synthesized stack (a CloudFormation template as JSON), its CloudFormation
 * tokens replaced by recognizable values: a Lambda function's ARN by `lambdaArnOf(logicalId)` (a version's by
 * `lambdaVersionArnOf(functionId, versionId)`), a topic's by
 * `topicArnOf(logicalId)`, the name of a schedule, log group, bucket or DynamoDB table by its logical id, the pseudo
 * parameters by us-east-1 / 123456789012. Any other token is refused.
 */
export function definitionFromTemplate(
  template: {
    Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>
  },
  /** Which state machine: the one whose logical id contains this (default: the stack's loader). */
  named = 'Orchestration',
): StateMachineDefinition {
  const machines = Object.entries(template.Resources)
    .filter(([id, r]) => r.Type === 'AWS::StepFunctions::StateMachine' && id.includes(named))
    .map(([, r]) => r)
  if (machines.length !== 1)
    throw new Error(`expected one state machine named ${named}, found ${machines.length}`)
  const properties = machines[0]!.Properties ?? {}
  if (properties.DefinitionSubstitutions !== undefined) {
    throw new UnsupportedDefinitionError('DefinitionSubstitutions')
  }
  const body = properties.DefinitionString
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': 'us-east-1',
    'AWS::AccountId': '123456789012',
    'AWS::URLSuffix': 'amazonaws.com',
  }
  const resolve = (token: unknown): string => {
    if (typeof token === 'string') return token
    const t = token as { 'Fn::GetAtt'?: [string, string]; Ref?: string }
    const [id, attribute] = t['Fn::GetAtt'] ?? []
    if (id !== undefined && attribute === 'Arn' && template.Resources[id]?.Type === 'AWS::Lambda::Function') {
      return lambdaArnOf(id)
    }
    const versioned = t.Ref !== undefined ? template.Resources[t.Ref] : undefined
    if (versioned?.Type === 'AWS::Lambda::Version') {
      const fn = (versioned.Properties?.FunctionName as { Ref?: string } | undefined)?.Ref
      if (fn !== undefined) return lambdaVersionArnOf(fn, t.Ref!)
    }
    if (t.Ref !== undefined && pseudo[t.Ref] !== undefined) return pseudo[t.Ref]!
    if (t.Ref !== undefined && template.Resources[t.Ref]?.Type === 'AWS::SNS::Topic') return topicArnOf(t.Ref)
    // A schedule's, log group's or DynamoDB table's Ref is its name; its logical id stands in for it.
    const named = [
      'AWS::Scheduler::Schedule',
      'AWS::Logs::LogGroup',
      'AWS::DynamoDB::Table',
      'AWS::S3::Bucket',
    ]
    if (t.Ref !== undefined && named.includes(template.Resources[t.Ref]?.Type ?? '')) return t.Ref
    throw new UnsupportedDefinitionError(`CloudFormation token ${JSON.stringify(token)} in the definition`)
  }
  let text: string
  if (typeof body === 'string') text = body
  else {
    const join = (body as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']
    if (join === undefined) throw new UnsupportedDefinitionError(`DefinitionString ${JSON.stringify(body)}`)
    text = join[1].map(resolve).join(join[0])
  }
  return JSON.parse(text) as StateMachineDefinition
}

export function lambdaArnOf(logicalId: string): string {
  return `arn:aws:lambda:us-east-1:123456789012:function:${logicalId}`
}

/** A published version of a function; the version's logical id stands in for its number. */
export function lambdaVersionArnOf(functionLogicalId: string, versionLogicalId: string): string {
  return `${lambdaArnOf(functionLogicalId)}:${versionLogicalId}`
}

export function topicArnOf(logicalId: string): string {
  return `arn:aws:sns:us-east-1:123456789012:${logicalId}`
}

function expressionOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const m = /^\{%([\s\S]*)%\}$/.exec(value)
  return m ? m[1]!.trim() : undefined
}

function matches(errorEquals: readonly string[], error: string): boolean {
  return errorEquals.includes(error) || (errorEquals.includes(STATES_ALL) && error !== 'States.Runtime')
}

function asFailure(error: unknown): StatesFailure {
  if (error instanceof StatesFailure) return error
  if (error instanceof Error) return new StatesFailure(error.name, error.message)
  return new StatesFailure('Error', String(error))
}

function refuseUnknown(where: string, object: Record<string, unknown>, allowed: readonly string[]): void {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) {
    throw new UnsupportedDefinitionError(`${where}: expected an object`)
  }
  const unknown = Object.keys(object).filter((k) => !allowed.includes(k))
  if (unknown.length > 0) throw new UnsupportedDefinitionError(`${where}: field ${unknown.join(', ')}`)
}

function checkAssign(where: string, assign: unknown): void {
  if (typeof assign !== 'object' || assign === null || Array.isArray(assign)) {
    throw new UnsupportedDefinitionError(`${where}: Assign must be an object of variables`)
  }
  for (const name of Object.keys(assign)) {
    if (name === 'states' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new UnsupportedDefinitionError(`${where}: variable name ${name}`)
    }
  }
}

function checkErrorEquals(where: string, errorEquals: unknown, last: boolean): void {
  if (!Array.isArray(errorEquals) || errorEquals.length === 0) {
    throw new UnsupportedDefinitionError(`${where}: ErrorEquals must be a non-empty array`)
  }
  for (const name of errorEquals as unknown[]) {
    if (typeof name !== 'string') throw new UnsupportedDefinitionError(`${where}: error name ${String(name)}`)
    if (name === STATES_ALL) {
      // Step Functions rejects a definition where States.ALL is not alone in the last retrier/catcher.
      if (errorEquals.length !== 1 || !last) {
        throw new UnsupportedDefinitionError(`${where}: States.ALL must be alone, in the last entry`)
      }
    } else if (name.startsWith('States.')) {
      throw new UnsupportedDefinitionError(`${where}: error name ${name} is not simulated`)
    }
  }
}

/** The parts of a JSONata AST node read here (jsonata's ExprNode type lacks `path`, `bind` and `steps`). */
interface AstNode {
  readonly type: string
  readonly value?: unknown
  readonly steps?: readonly AstNode[]
  readonly procedure?: AstNode
  readonly lhs?: unknown
  readonly arguments?: readonly AstNode[]
}

/** What an expression reads and calls, from the JSONata AST. */
function analyse(ast: jsonata.ExprNode): {
  functions: Set<string>
  variables: Set<string>
  local: Set<string>
  states: Set<string>
  readsContext: boolean
} {
  const functions = new Set<string>()
  const variables = new Set<string>()
  const local = new Set<string>()
  const states = new Set<string>()
  let readsContext = false
  const seen = new Set<object>()
  const visit = (node: unknown, pathStep?: number): void => {
    if (typeof node !== 'object' || node === null || seen.has(node)) return
    seen.add(node)
    if (Array.isArray(node)) {
      for (const item of node) visit(item)
      return
    }
    const n = node as AstNode
    if (n.type === 'variable') {
      if (n.value === '' || n.value === '$') readsContext = true
      else variables.add(String(n.value))
    }
    // A field name read from the context: a bare name, or the first step of a path.
    if (n.type === 'name' && (pathStep === undefined || pathStep === 0)) readsContext = true
    if ((n.type === 'function' || n.type === 'partial') && n.procedure?.type === 'variable') {
      functions.add(String(n.procedure.value))
    }
    if (n.type === 'bind' && (n.lhs as AstNode | undefined)?.type === 'variable') {
      local.add(String((n.lhs as AstNode).value))
    }
    if (n.type === 'lambda') for (const a of n.arguments ?? []) local.add(String(a.value))
    if (n.type === 'path') {
      const steps = n.steps ?? []
      if (steps[0]?.type === 'variable' && steps[0].value === 'states') {
        states.add(steps[1]?.type === 'name' ? String(steps[1].value) : '*')
      }
      steps.forEach((step, i) => visit(step, i))
    } else if (n.type === 'variable' && n.value === 'states' && pathStep === undefined) {
      states.add('*')
    }
    for (const [key, value] of Object.entries(n)) if (key !== 'steps' || n.type !== 'path') visit(value)
  }
  visit(ast)
  return { functions, variables, local, states, readsContext }
}

/** A JSON value (JSONata sequences become arrays); a function or non-finite number fails the state. */
function toJson(value: unknown, where: string): Json {
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'function') throw new Error(`${where}: a JSONata function is not a JSON value`)
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`${where}: ${v} is not a JSON number`)
    return v
  })
  return text === undefined ? null : (JSON.parse(text) as Json)
}
