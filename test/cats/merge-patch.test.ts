import t from 'tap'
import { findPatchProblems, mergePatch, patchWithinLimit } from '../../src/cats/merge-patch.js'

t.test('RFC 7396 Appendix A: every example gives its result', async (t) => {
  const examples: Array<[unknown, unknown, unknown]> = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }]
  ]
  for (const [target, patch, result] of examples) {
    const before = structuredClone(target)
    t.strictSame(mergePatch(target, patch), result, `${JSON.stringify(target)} + ${JSON.stringify(patch)}`)
    t.strictSame(target, before, 'the target is untouched')
  }
})

t.test('keys are data: __proto__ in a patch never reaches a prototype', async (t) => {
  const patched = mergePatch({ a: 1 }, JSON.parse('{"__proto__":{"polluted":true}}')) as Record<string, unknown>
  t.equal(Object.getPrototypeOf(patched), Object.prototype)
  t.strictSame(Object.keys(patched), ['a', '__proto__'])
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('patchWithinLimit keeps the id and the key order, and refuses a cat over the limit', async (t) => {
  const cat = { id: 1, name: 'Tom', age: 3, breed: 'Siamese', toy: { kind: 'ball' } }
  const { merged, json } = patchWithinLimit(cat, { id: 7, age: 4, toy: { color: 'red' }, owner: 'Ann' }, 1000)
  t.strictSame(merged, { id: 1, name: 'Tom', age: 4, breed: 'Siamese', toy: { kind: 'ball', color: 'red' }, owner: 'Ann' })
  t.equal(json, JSON.stringify(merged))
  t.throws(() => patchWithinLimit(cat, { toy: 'x'.repeat(100) }, 100), { code: 'CATS_ERR_CAT_TOO_LARGE', statusCode: 413 })
})

t.test('findPatchProblems: null for a kept field, and what makes any merge unsafe', async (t) => {
  t.strictSame(findPatchProblems({ toy: null, age: 4 }), [], 'removing other fields is fine')
  t.strictSame(findPatchProblems({ name: null, age: null, breed: null }).map((problem) => problem.instancePath), ['/name', '/age', '/breed'])
  const unsafe = findPatchProblems({ name: null, nested: JSON.parse('{"__proto__":1}') })
  t.strictSame(unsafe.map((problem) => problem.instancePath), ['/name', '/nested/__proto__'])
})
