import { describe, expect, it } from 'vitest'
import { isWidening } from '../../../lib/core/type-widening.ts'

describe('isWidening: a type change applied in place', () => {
  it.each([
    ['INTEGER', 'BIGINT'],
    ['SMALLINT', 'INTEGER'],
    ['TINYINT', 'BIGINT'],
    ['UINTEGER', 'BIGINT'],
    ['INT', 'INT8'],
    ['DECIMAL(10,2)', 'DECIMAL(18,2)'],
    ['NUMERIC(5, 0)', 'DECIMAL(20,0)'],
    ['FLOAT', 'DOUBLE'],
    ['REAL', 'FLOAT8'],
    ['VARCHAR(10)', 'VARCHAR(40)'],
    ['VARCHAR(10)', 'VARCHAR'],
  ])('%s → %s widens', (from, to) => expect(isWidening(from, to)).toBe(true))

  it.each([
    ['BIGINT', 'INTEGER'],
    ['INTEGER', 'INTEGER'],
    ['INTEGER', 'UBIGINT'],
    ['UINTEGER', 'UINTEGER'],
    ['DECIMAL(10,2)', 'DECIMAL(8,2)'],
    ['DECIMAL(10,2)', 'DECIMAL(12,3)'],
    ['DECIMAL(10,2)', 'DECIMAL(10,2)'],
    ['DOUBLE', 'FLOAT'],
    ['VARCHAR', 'VARCHAR(10)'],
    ['VARCHAR(40)', 'VARCHAR(10)'],
    ['INTEGER', 'VARCHAR'],
    ['INTEGER', 'DOUBLE'],
    ['INTEGER', 'DECIMAL(18,0)'],
    ['TIMESTAMP', 'TIMESTAMPTZ'],
  ])('%s → %s does not', (from, to) => expect(isWidening(from, to)).toBe(false))
})
