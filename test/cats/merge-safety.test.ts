import t from 'tap'
import { MAX_MERGE_DEPTH, findMergeProblems } from '../../src/cats/merge-safety.js'
import { invalidRequest } from '../../src/http/validation-issues.js'
import { MAX_ISSUES } from '../../src/http/error-limits.js'

/** JSON text parsed as an unknown value: own `__proto__` keys survive, as in a request body. */
const body = (json: string): unknown => JSON.parse(json)

/** An object with `levels` nested object levels, the outermost counted as level 1; the innermost holds `leaf`. */
function nested (levels: number, leaf: unknown = 'x'): unknown {
  let value: unknown = { leaf }
  for (let level = 1; level < levels; level++) value = { a: value }
  return value
}

/** The same as `nested`, but with arrays as the levels. */
function nestedArrays (levels: number): unknown {
  let value: unknown = ['x']
  for (let level = 1; level < levels; level++) value = [value]
  return value
}

t.test('MAX_MERGE_DEPTH is 32', async (t) => {
  t.equal(MAX_MERGE_DEPTH, 32)
})

t.test('plain values and ordinary objects have no problems', async (t) => {
  const safe: unknown[] = [
    undefined, null, 0, 'text', true,
    {}, [],
    { name: 'Tom', age: 3, tags: ['a', { b: [1, 2, { c: null }] }] },
    body('{"proto": 1, "__proto": 2, "_proto_": 3, "Constructor": 4, "prototype": 5, "constructors": 6}')
  ]
  for (const value of safe) t.strictSame(findMergeProblems(value), [], JSON.stringify(value) ?? 'undefined')
})

t.test('a top-level __proto__ key is reported', async (t) => {
  t.strictSame(findMergeProblems(body('{"name": "Tom", "__proto__": {"admin": true}}')), [
    { instancePath: '/__proto__', message: 'uses the reserved key "__proto__"' }
  ])
})

t.test('a top-level constructor key is reported', async (t) => {
  t.strictSame(findMergeProblems({ constructor: { prototype: { admin: true } } }), [
    { instancePath: '/constructor', message: 'uses the reserved key "constructor"' }
  ])
  t.strictSame(findMergeProblems({ constructor: 'a string value' }), [
    { instancePath: '/constructor', message: 'uses the reserved key "constructor"' }
  ], 'whatever its value')
})

t.test('reserved keys at any depth, in objects and arrays', async (t) => {
  t.strictSame(findMergeProblems(body('{"a": {"b": {"__proto__": {}}}}')), [
    { instancePath: '/a/b/__proto__', message: 'uses the reserved key "__proto__"' }
  ], 'nested objects')
  t.strictSame(findMergeProblems(body('{"list": [1, {"constructor": 1}]}')), [
    { instancePath: '/list/1/constructor', message: 'uses the reserved key "constructor"' }
  ], 'an object inside an array')
  t.strictSame(findMergeProblems(body('[[{"x": [{"__proto__": null}]}]]')), [
    { instancePath: '/0/0/x/0/__proto__', message: 'uses the reserved key "__proto__"' }
  ], 'a top-level array')
  t.strictSame(findMergeProblems(nested(MAX_MERGE_DEPTH - 1, body('{"__proto__": 1}'))), [{
    instancePath: `${'/a'.repeat(MAX_MERGE_DEPTH - 2)}/leaf/__proto__`,
    message: 'uses the reserved key "__proto__"'
  }], 'in an object at the deepest allowed level (32)')
})

t.test('every problem is listed, not only the first', async (t) => {
  const problems = findMergeProblems(body(`{
    "__proto__": {"x": 1},
    "ok": {"constructor": 1, "fine": [{"__proto__": 2}]},
    "constructor": 3,
    "deep": ${JSON.stringify(nested(MAX_MERGE_DEPTH))}
  }`))
  t.strictSame(problems, [
    { instancePath: '/__proto__', message: 'uses the reserved key "__proto__"' },
    { instancePath: '/ok/constructor', message: 'uses the reserved key "constructor"' },
    { instancePath: '/ok/fine/0/__proto__', message: 'uses the reserved key "__proto__"' },
    { instancePath: '/constructor', message: 'uses the reserved key "constructor"' },
    // "deep" is level 2, so its 32 levels end at level 33
    { instancePath: `/deep${'/a'.repeat(MAX_MERGE_DEPTH - 1)}`, message: 'must not be nested deeper than 32 levels' }
  ])
})

t.test('a reserved key is reported, its value is not searched further', async (t) => {
  t.strictSame(findMergeProblems(body('{"__proto__": {"constructor": {"__proto__": 1}}}')), [
    { instancePath: '/__proto__', message: 'uses the reserved key "__proto__"' }
  ])
})

t.test('depth limit: the body is level 1; 32 levels pass, 33 fail', async (t) => {
  t.strictSame(findMergeProblems(nested(1)), [], 'one level')
  t.strictSame(findMergeProblems(nested(MAX_MERGE_DEPTH)), [], 'exactly 32 object levels')
  t.strictSame(findMergeProblems(nested(MAX_MERGE_DEPTH, null)), [], 'a null at level 33 is not a level')
  t.strictSame(findMergeProblems(nested(MAX_MERGE_DEPTH, 'deep string')), [], 'nor is a string')

  const tooDeep = findMergeProblems(nested(MAX_MERGE_DEPTH + 1))
  t.strictSame(tooDeep, [{
    instancePath: '/a'.repeat(MAX_MERGE_DEPTH),
    message: 'must not be nested deeper than 32 levels'
  }], '33 object levels: the level-33 object is reported')

  t.strictSame(findMergeProblems(nested(MAX_MERGE_DEPTH, {})), [{
    instancePath: `${'/a'.repeat(MAX_MERGE_DEPTH - 1)}/leaf`,
    message: 'must not be nested deeper than 32 levels'
  }], 'even an empty object at level 33 counts')
})

t.test('depth limit counts arrays as levels too', async (t) => {
  t.strictSame(findMergeProblems(nestedArrays(MAX_MERGE_DEPTH)), [], '32 array levels')
  t.strictSame(findMergeProblems(nestedArrays(MAX_MERGE_DEPTH + 1)), [{
    instancePath: '/0'.repeat(MAX_MERGE_DEPTH),
    message: 'must not be nested deeper than 32 levels'
  }], '33 array levels')
})

t.test('a body far deeper than the limit gives one problem per too-deep branch, and no stack overflow', async (t) => {
  const problems = findMergeProblems(nested(100_000))
  t.equal(problems.length, 1)
  t.equal(problems[0].message, 'must not be nested deeper than 32 levels')
  const twoBranches = { left: nested(40), right: nested(40), fine: nested(31) }
  t.strictSame(findMergeProblems(twoBranches).map((p) => p.instancePath), [
    `/left${'/a'.repeat(MAX_MERGE_DEPTH - 1)}`,
    `/right${'/a'.repeat(MAX_MERGE_DEPTH - 1)}`
  ])
})

t.test('keys are JSON-pointer escaped: ~ as ~0 and / as ~1', async (t) => {
  const problems = findMergeProblems(body('{"a/b": {"c~d": {"~/": {"__proto__": 1}}}}'))
  t.strictSame(problems, [
    { instancePath: '/a~1b/c~0d/~0~1/__proto__', message: 'uses the reserved key "__proto__"' }
  ])
  t.strictSame(findMergeProblems(body('{"~1": {"constructor": 1}}')), [
    { instancePath: '/~01/constructor', message: 'uses the reserved key "constructor"' }
  ], 'a literal "~1" key is not confused with "/"')
  t.strictSame(findMergeProblems(body('{"": {"__proto__": 1}}')), [
    { instancePath: '//__proto__', message: 'uses the reserved key "__proto__"' }
  ], 'an empty key')
})

t.test('the escaped paths become the right field names in a validation error', async (t) => {
  const problems = findMergeProblems(body('{"a/b": {"c~d": {"~1": {"__proto__": 1}}}}'))
  const error = invalidRequest('body', problems)
  t.equal(error.statusCode, 400)
  t.equal(error.message, 'body.a/b.c~d.~1.__proto__ uses the reserved key "__proto__"')
})

t.test('the walk stops at the first MAX_ISSUES problems: never one per node of a hostile body', async (t) => {
  // 31 levels of long keys, then 1,385 empty objects at level 33: the 8,186-byte body of the report.
  const manyTooDeep = nested(MAX_MERGE_DEPTH - 1, Array.from({ length: 1385 }, () => ({})))
  const problems = findMergeProblems(manyTooDeep)
  t.equal(problems.length, MAX_ISSUES)
  t.strictSame(problems.map((problem) => problem.instancePath.split('/').at(-1)), Array.from({ length: MAX_ISSUES }, (_, index) => String(index)),
    'the first ones, in order')
  const reserved = body(`[${Array.from({ length: 1000 }, () => '{"__proto__": 1, "constructor": 2}').join(',')}]`)
  t.equal(findMergeProblems(reserved).length, MAX_ISSUES, 'reserved keys too')
  t.equal(findMergeProblems(reserved, 3).length, 3, 'or at a limit of the caller\'s')
  t.equal(findMergeProblems(nested(MAX_MERGE_DEPTH - 1, Array.from({ length: MAX_ISSUES }, () => ({})))).length, MAX_ISSUES, 'exactly the cap')
})
