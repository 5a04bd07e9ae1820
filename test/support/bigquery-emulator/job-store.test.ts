import { describe, expect, it } from 'vitest'
import { BigQueryError } from './api-errors.ts'
import { JobStore } from './job-store.ts'

const ref = (jobId: string, location = 'EU') => ({ projectId: 'p', jobId, location })

describe('emulator job store', () => {
  it('a job id is taken once per project: a second insert answers 409 duplicate, even after the first failed', async () => {
    const jobs = new JobStore(Date.now)
    const first = jobs.insert(ref('j1'), {}, async () => {
      throw new BigQueryError('backendError', 'try again')
    })
    await first.done
    expect(first.state).toBe('DONE')
    expect(first.error?.reason).toBe('backendError')
    const again = (() => {
      try {
        jobs.insert(ref('j1', 'US'), {}, async () => ({ statistics: {} }))
      } catch (error) {
        return error
      }
    })()
    expect(again).toBeInstanceOf(BigQueryError)
    expect((again as BigQueryError).reason).toBe('duplicate')
    expect((again as BigQueryError).httpStatus).toBe(409)
    expect((again as BigQueryError).message).toBe('Already Exists: Job p:US.j1')
  })

  it('jobs run one at a time in insertion order, PENDING then RUNNING then DONE', async () => {
    const jobs = new JobStore(Date.now)
    const order: string[] = []
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const a = jobs.insert(ref('a'), {}, async () => {
      order.push('a start')
      await gate
      order.push('a end')
      return { statistics: {} }
    })
    const b = jobs.insert(ref('b'), {}, async () => {
      order.push('b')
      return { statistics: {} }
    })
    expect(b.state).toBe('PENDING')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(a.state).toBe('RUNNING')
    expect(b.state).toBe('PENDING')
    release()
    await jobs.idle()
    expect(order).toEqual(['a start', 'a end', 'b'])
    expect([a.state, b.state]).toEqual(['DONE', 'DONE'])
  })

  it('a job is found only in its own location; a defect in a job is an internalError, not a crash', async () => {
    const jobs = new JobStore(Date.now)
    const job = jobs.insert(ref('j'), {}, async () => {
      throw new TypeError('oops')
    })
    await job.done
    expect(jobs.get('p', 'j', 'eu')).toBe(job)
    expect(jobs.get('p', 'j', 'US')).toBeUndefined()
    expect(job.error?.reason).toBe('internalError')
  })

  it('refuses job ids BigQuery refuses', () => {
    const jobs = new JobStore(Date.now)
    expect(() => jobs.insert(ref('bad id!'), {}, async () => ({ statistics: {} }))).toThrow(/Invalid job ID/)
  })
})
