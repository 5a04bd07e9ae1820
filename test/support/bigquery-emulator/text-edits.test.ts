import { describe, expect, it } from 'vitest'
import { TextEdits } from './text-edits.ts'

describe('emulator text edits', () => {
  it('replaces byte ranges (multi-byte text kept) and maps offsets of the result back to the source', () => {
    const source = Buffer.from('SELECT é FROM `p`.`d`.`t` JOIN d.u ON TRUE')
    const edits = new TextEdits(source)
    const first = source.indexOf('`p`')
    edits.replace(first, first + '`p`.`d`.`t`'.length, '`p.d.t` AS `t`')
    const second = source.indexOf('d.u')
    edits.replace(second, second + 3, '`p.d.u` AS `u`')
    const { text, toSource } = edits.apply()
    expect(text).toBe('SELECT é FROM `p.d.t` AS `t` JOIN `p.d.u` AS `u` ON TRUE')
    const joinInResult = Buffer.from(text).indexOf('JOIN')
    expect(toSource(joinInResult)).toBe(source.indexOf('JOIN'))
    expect(toSource(Buffer.from(text).indexOf('ON TRUE'))).toBe(source.indexOf('ON TRUE'))
    // Inside a replacement: the start of what it replaced.
    expect(toSource(Buffer.from(text).indexOf('p.d.u'))).toBe(second)
  })

  it('drops an edit nested in a wider one (a call replaced with its arguments)', () => {
    const source = Buffer.from('f((SELECT x FROM d.t))')
    const edits = new TextEdits(source)
    edits.replace(0, source.length, '`call_1`')
    edits.replace(source.indexOf('d.t'), source.indexOf('d.t') + 3, '`p.d.t`')
    expect(edits.apply().text).toBe('`call_1`')
  })
})
