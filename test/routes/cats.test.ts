import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, bearer, tokenFor } from '../support/app.js'

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const create = (app: FastifyInstance, cat: unknown = tom) => app.inject({ method: 'POST', url: '/cats', payload: JSON.stringify(cat), headers: { 'content-type': 'application/json' } })
const put = (app: FastifyInstance, id: number | string, body: unknown) => app.inject({ method: 'PUT', url: `/cats/${id}`, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } })

t.test('a valid create gets 201 with exactly id, name, age, breed', async (t) => {
  const app = await build(t)
  const res = await create(app)
  t.equal(res.statusCode, 201)
  t.strictSame(res.json(), { id: 1, ...tom })
})

t.test('unknown fields are removed silently, not stored', async (t) => {
  const app = await build(t)
  const res = await create(app, { ...tom, color: 'black', id: 77, isAdmin: true })
  t.equal(res.statusCode, 201)
  t.strictSame(res.json(), { id: 1, ...tom })
  t.strictSame((await app.inject('/cats/1')).json(), { id: 1, ...tom })
})

t.test('bodies are not coerced and every failing field is listed', async (t) => {
  const app = await build(t)
  const cases: Array<[string, unknown, string[]]> = [
    ['age as a string', { ...tom, age: '3' }, ['body.age']],
    ['age as a float', { ...tom, age: 3.5 }, ['body.age']],
    ['age as a boolean', { ...tom, age: true }, ['body.age']],
    ['age null', { ...tom, age: null }, ['body.age']],
    ['name as a number', { ...tom, name: 42 }, ['body.name']],
    ['breed as an array', { ...tom, breed: ['x'] }, ['body.breed']],
    ['missing name', { age: 3, breed: 'x' }, ['body.name']],
    ['everything wrong', { name: 1, age: '1', breed: null }, ['body.name', 'body.age', 'body.breed']],
    ['empty object', {}, ['body.name', 'body.age', 'body.breed']],
    ['array body', [tom], ['body']],
    ['null body', null, ['body']],
    ['number body', 5, ['body']]
  ]
  for (const [name, body, fields] of cases) {
    const res = await create(app, body)
    t.equal(res.statusCode, 400, name)
    const reply = res.json()
    t.equal(reply.error, 'Bad Request', name)
    t.equal(reply.code, 'FST_ERR_VALIDATION', name)
    t.type(reply.message, 'string', name)
    t.strictSame(reply.validation.map((issue: { field: string }) => issue.field).sort(), [...fields].sort(), name)
  }
  // The handler never ran: nothing was stored.
  t.strictSame((await app.inject('/cats')).json(), [])
})

t.test('list returns every cat in creation order', async (t) => {
  const app = await build(t)
  const empty = await app.inject('/cats')
  t.equal(empty.statusCode, 200)
  t.strictSame(empty.json(), [])
  await create(app, { name: 'A', age: 1, breed: 'x' })
  await create(app, { name: 'B', age: 2, breed: 'y' })
  await create(app, { name: 'C', age: 3, breed: 'z' })
  t.strictSame((await app.inject('/cats')).json().map((cat: { name: string }) => cat.name), ['A', 'B', 'C'])
})

t.test('read one cat by id', async (t) => {
  const app = await build(t)
  await create(app)
  const res = await app.inject('/cats/1')
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), { id: 1, ...tom })
})

t.test('a missing cat gets 200 with an empty body and nothing changes', async (t) => {
  const app = await build(t)
  await create(app)
  for (const res of [await app.inject('/cats/2'), await put(app, 2, { name: 'X' })]) {
    t.equal(res.statusCode, 200)
    t.equal(res.body, '')
    t.equal(res.headers['content-length'], '0')
  }
  t.strictSame((await app.inject('/cats')).json(), [{ id: 1, ...tom }])
})

t.test('ids must be decimal integers; 0 and negatives match nothing', async (t) => {
  const app = await build(t)
  await create(app)
  for (const id of ['abc', '1.5', '1e1', '0x10', '%20', '1%20', '+1', '--1', '9999999999999999']) {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `/cats/${id}`, payload: method === 'PUT' ? { name: 'x' } : undefined })
      t.equal(res.statusCode, 400, `${method} ${id}`)
      t.equal(res.json().validation[0].field, 'params.id', `${method} ${id}`)
    }
  }
  for (const id of ['0', '-1', '-0']) {
    const res = await app.inject(`/cats/${id}`)
    t.equal(res.statusCode, 200, id)
    t.equal(res.body, '', id)
  }
  t.strictSame((await app.inject('/cats/001')).json(), { id: 1, ...tom }, 'leading zeros are still decimal')
})

t.test('PUT merges any fields, ignores id, and returns the whole record', async (t) => {
  const app = await build(t)
  await create(app)
  const res = await put(app, 1, { age: 'old', id: 42, toys: ['ball'], owner: { name: 'Ann' } })
  t.equal(res.statusCode, 200)
  const expected = { id: 1, name: 'Tom', age: 'old', breed: 'Siamese', toys: ['ball'], owner: { name: 'Ann' } }
  t.strictSame(res.json(), expected)
  t.strictSame((await app.inject('/cats/1')).json(), expected, 'read returns the merged record exactly')
  t.strictSame((await app.inject('/cats')).json(), [expected], 'list returns the merged record exactly')
  t.equal((await app.inject('/cats/42')).body, '', 'the id did not change')
})

t.test('merged values of any JSON type serialize exactly, never coerced', async (t) => {
  const app = await build(t)
  await create(app)
  await create(app, { name: 'Other', age: 1, breed: 'x' })
  const odd = { name: { first: 'T' }, age: [1, 2], breed: null, flag: false, n: 1.5, s: '', nested: { a: [{ b: null }] } }
  t.strictSame((await put(app, 1, odd)).json(), { id: 1, ...odd })
  t.strictSame((await app.inject('/cats')).json(), [{ id: 1, ...odd }, { id: 2, name: 'Other', age: 1, breed: 'x' }])
})

t.test('a PUT body that is not a JSON object gets 400', async (t) => {
  const app = await build(t)
  await create(app)
  for (const body of [[1], 'x', 5, null]) {
    const res = await put(app, 1, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().validation[0].field, 'body')
  }
  const empty = await app.inject({ method: 'PUT', url: '/cats/1' })
  t.equal(empty.statusCode, 400, 'no body')
  t.strictSame((await app.inject('/cats/1')).json(), { id: 1, ...tom })
})

t.test('__proto__ and constructor keys at any depth get 400 and change nothing', async (t) => {
  const app = await build(t)
  await create(app)
  const bodies = [
    '{"__proto__": {"polluted": true}}',
    '{"a": {"__proto__": {"polluted": true}}}',
    '{"constructor": {"prototype": {"polluted": true}}}',
    '{"constructor": 1}',
    '{"a": [{"b": {"constructor": "x"}}]}'
  ]
  for (const payload of bodies) {
    const res = await app.inject({ method: 'PUT', url: '/cats/1', payload, headers: { 'content-type': 'application/json' } })
    t.equal(res.statusCode, 400, payload)
    t.equal(res.json().error, 'Bad Request', payload)
  }
  const nested = await put(app, 1, { a: [{ b: { constructor: 'x' } }], ok: 1 })
  t.strictSame(nested.json().validation, [{ field: 'body.a.0.b.constructor', message: 'uses the reserved key "constructor"' }])
  t.strictSame((await app.inject('/cats/1')).json(), { id: 1, ...tom })
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('a PUT body nested deeper than 32 levels gets 400', async (t) => {
  const app = await build(t)
  await create(app)
  const nest = (levels: number): unknown => levels === 1 ? {} : { deeper: nest(levels - 1) }
  t.equal((await put(app, 1, nest(32))).statusCode, 200, '32 levels are accepted')
  const res = await put(app, 1, nest(33))
  t.equal(res.statusCode, 400, '33 levels are refused')
  t.match(res.json().validation[0].message, /deeper than 32 levels/)
})

t.test('delete answers { deleted: true } whether or not a cat matched', async (t) => {
  const app = await build(t)
  await create(app)
  for (const id of [1, 1, 5]) {
    const res = await app.inject({ method: 'DELETE', url: `/cats/${id}` })
    t.equal(res.statusCode, 200)
    t.strictSame(res.json(), { deleted: true })
  }
  t.strictSame((await app.inject('/cats')).json(), [])
})

t.test('ids are count + 1, repeat after deletes, and the earliest created wins', async (t) => {
  const app = await build(t)
  for (const name of ['A', 'B', 'C']) await create(app, { name, age: 1, breed: 'x' })
  await app.inject({ method: 'DELETE', url: '/cats/1' })
  const d = await create(app, { name: 'D', age: 1, breed: 'x' })
  t.equal(d.json().id, 3, 'two cats stored, so the new id is 3')
  t.strictSame((await app.inject('/cats')).json().map((cat: { id: number, name: string }) => [cat.id, cat.name]), [[2, 'B'], [3, 'C'], [3, 'D']])
  t.equal((await app.inject('/cats/3')).json().name, 'C', 'read acts on the earliest created')
  t.equal((await put(app, 3, { age: 9 })).json().name, 'C', 'update acts on the earliest created')
  t.equal((await app.inject('/cats')).json()[2].age, 1, 'the later duplicate is untouched')
  await app.inject({ method: 'DELETE', url: '/cats/3' })
  t.strictSame((await app.inject('/cats')).json().map((cat: { name: string }) => cat.name), ['B', 'D'], 'delete removes only the earliest')
  t.equal((await app.inject('/cats/3')).json().name, 'D')
})

t.test('/cats is public by default', async (t) => {
  const app = await build(t)
  t.equal((await create(app)).statusCode, 201)
  t.equal((await app.inject('/cats')).statusCode, 200)
})

t.test('CATS_AUTH=required guards every /cats route, and auth runs before validation', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  const requests = [
    { method: 'POST' as const, url: '/cats', payload: tom },
    { method: 'GET' as const, url: '/cats' },
    { method: 'GET' as const, url: '/cats/1' },
    { method: 'PUT' as const, url: '/cats/1', payload: { age: 4 } },
    { method: 'DELETE' as const, url: '/cats/1' }
  ]
  for (const request of requests) {
    const res = await app.inject(request)
    t.equal(res.statusCode, 401, `${request.method} ${request.url} without a token`)
    t.equal(res.headers['www-authenticate'], 'Bearer')
  }
  const badBody = await app.inject({ method: 'POST', url: '/cats', payload: { age: 'x' } })
  t.equal(badBody.statusCode, 401, 'a bad body without a token is a 401, not a 400')
  const badId = await app.inject({ url: '/cats/abc' })
  t.equal(badId.statusCode, 401, 'a bad id without a token is a 401, not a 400')
  const headers = bearer(tokenFor(app))
  const statuses = []
  for (const request of requests) statuses.push((await app.inject({ ...request, headers })).statusCode)
  t.strictSame(statuses, [201, 200, 200, 200, 200], 'with a token every route works')
})

t.test('CATS_AUTH=required is also a plugin option (same key as the environment)', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  t.equal((await app.inject('/cats')).statusCode, 401)
})
