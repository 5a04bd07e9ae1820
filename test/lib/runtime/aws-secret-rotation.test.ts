import { describe, expect, it } from 'vitest'

import { SourceError, WarehouseError } from '../../../lib/core/errors.ts'
import { afterSecretRefresh, isAuthenticationFailure } from '../../../lib/runtime/aws-secret-rotation.ts'

const caused = (cause: unknown) => new SourceError('items', 'table items: authentication failed', { cause })

describe('which failures are refused logins (the secret is read again only for those)', () => {
  it('knows the refusals of PostgreSQL, MySQL/MariaDB and Google, however deep in the causes', () => {
    expect(isAuthenticationFailure(caused({ code: '28P01' }))).toBe(true)
    expect(isAuthenticationFailure(caused({ code: '28000' }))).toBe(true)
    expect(isAuthenticationFailure(caused({ code: 'ER_ACCESS_DENIED_ERROR', errno: 1045 }))).toBe(true)
    const grant = Object.assign(new Error('invalid_grant: Invalid JWT Signature.'), {
      response: { status: 400, data: { error: 'invalid_grant' } },
    })
    expect(isAuthenticationFailure(new WarehouseError('merge', 'SELECT 1', { cause: grant }))).toBe(true)
    expect(isAuthenticationFailure(new WarehouseError('merge', 'SELECT 1', { cause: { code: 401 } }))).toBe(
      true,
    )
  })

  it('leaves everything else alone: a missing table, a full disk, a refused permission, a network failure', () => {
    for (const cause of [
      { code: '42P01' },
      { code: 'ENOSPC' },
      { code: 403 },
      { code: 'ECONNREFUSED' },
      undefined,
    ])
      expect(isAuthenticationFailure(caused(cause))).toBe(false)
    expect(isAuthenticationFailure('28P01')).toBe(false)
  })

  it('a rotated secret makes the failure retryable; an unchanged one keeps its name and says so', () => {
    const refused = caused({ code: '28P01' })
    const rotated = afterSecretRefresh(refused, 'arn:s', true) as Error & { retryable: boolean }
    expect([rotated.retryable, rotated.cause]).toEqual([true, refused])
    expect(rotated.message).toBe(
      'table items: authentication failed (secret arn:s had been rotated: it was read again and the retry uses the new value)',
    )
    const unchanged = afterSecretRefresh(refused, 'arn:s', false) as Error & { retryable: boolean }
    expect([unchanged.name, unchanged.retryable]).toEqual(['SourceError', false])
    expect(unchanged.message).toMatch(/secret arn:s was read again and has not changed/)
  })
})
