import middy from '@middy/core'
import { describe, expect, it } from 'vitest'
import { ConfigError, LockHeldError, SourceError } from '../../lib/core/errors.ts'
import { retryableErrorsAsOneType } from '../../functions/shared/retryable-errors.ts'

const failingWith = (error: Error) =>
  middy(async () => {
    throw error
  }).use(retryableErrorsAsOneType())

const errorOf = async (error: Error) =>
  (await failingWith(error)(undefined, {} as never).catch((e: unknown) => e)) as Error

describe('retryableErrorsAsOneType (the errorType the state machine retries)', () => {
  it('reports a retryable error as RetryableError, keeping its message and cause', async () => {
    const original = new SourceError('customers', 'customers: connection to db:5432 dropped', {
      retryable: true,
    })
    const reported = await errorOf(original)
    expect(reported.name).toBe('RetryableError')
    expect(reported.message).toBe('customers: connection to db:5432 dropped')
    expect(reported.cause).toBe(original)
  })

  it('leaves LockHeldError and non-retryable errors as they are', async () => {
    const locked = new LockHeldError('customers', 'run-1', '2024-01-01T00:00:00Z')
    expect((await errorOf(locked)).name).toBe('LockHeldError')
    const config = new ConfigError('dimsync.yaml', ['tables[0].key: must not be empty'])
    expect(await errorOf(config)).toBe(config)
    expect((await errorOf(new SourceError('customers', 'no file matches'))).name).toBe('SourceError')
  })
})
