import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, bearer, tokenFor } from '../support/app.js'

// PATCH /cats/:id with a JSON merge patch (RFC 7396). The stores apply it alike: see the store contract.

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const mergePatch = { 'content-type': 'application/merge-patch+json' }
const patch = (app: FastifyInstance, id: number | string, body: unknown, headers: Record<string, string> = mergePatch) =>
  app.inject({ method: 'PATCH', url: `/cats/${id}`, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) })

async function withTom (t: Parameters<typeof build>[0]): Promise<FastifyInstance> {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/cats', headers: { 'content-type': 'application/json' }, payload: tom })
  return app
}

t.test('null removes a field, objects merge recursively, other values replace; id is ignored', async (t) => {
  const app = await withTom(t)
  const first = await patch(app, 1, { id: 9, age: 4, toy: { kind: 'ball', color: 'red' }, tags: ['a'] })
  t.equal(first.statusCode, 200)
  t.equal(first.headers['content-type'], 'application/json; charset=utf-8')
  t.strictSame(first.json(), { id: 1, name: 'Tom', age: 4, breed: 'Siamese', toy: { kind: 'ball', color: 'red' }, tags: ['a'] })
  const second = await patch(app, 1, { toy: { color: null, size: 2 }, tags: ['b'] })
  t.strictSame(second.json(), { id: 1, name: 'Tom', age: 4, breed: 'Siamese', toy: { kind: 'ball', size: 2 }, tags: ['b'] }, 'arrays replace')
  const third = await patch(app, 1, { toy: null, tags: null, name: { first: 'Tom', extra: null } })
  t.equal(third.body, '{"id":1,"name":{"first":"Tom"},"age":4,"breed":"Siamese"}', 'removed fields are gone; a kept field may become an object')
  t.equal((await app.inject('/cats/1')).body, third.body, 'as stored')
  t.strictSame((await app.inject('/cats')).json(), [third.json()], 'and listed')
  const empty = await patch(app, 1, {})
  t.equal(empty.body, third.body, 'an empty patch changes nothing')
})

t.test('no cat with the id: the empty 200, as for PUT', async (t) => {
  const app = await withTom(t)
  const res = await patch(app, 2, { age: 4 })
  t.equal(res.statusCode, 200)
  t.equal(res.body, '')
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8')
})

t.test('null for name, age or breed, or a patch that is not an object: 400, nothing changed', async (t) => {
  const app = await withTom(t)
  const removed = await patch(app, 1, { name: null, age: null, breed: null, toy: null })
  t.equal(removed.statusCode, 400)
  t.equal(removed.json().code, 'FST_ERR_VALIDATION')
  t.strictSame(removed.json().validation.map((issue: { field: string }) => issue.field), ['body.name', 'body.age', 'body.breed'])
  for (const body of ['[1]', '"text"', '3', 'null', 'true']) {
    const res = await patch(app, 1, body)
    t.equal(res.statusCode, 400, body)
    t.equal(res.json().code, 'FST_ERR_VALIDATION', body)
  }
  const proto = await patch(app, 1, '{"toy":{"__proto__":{"x":1}}}')
  t.equal(proto.statusCode, 400, '__proto__ at any depth')
  let deep: unknown = 1
  for (let level = 0; level < 40; level++) deep = { deep }
  const tooDeep = await patch(app, 1, { deep })
  t.equal(tooDeep.statusCode, 400, 'nested deeper than the limit')
  t.match(tooDeep.json().validation[0].message, /nested deeper/)
  t.equal((await patch(app, 'x', { age: 4 })).statusCode, 400, 'a bad id')
  t.strictSame((await app.inject('/cats/1')).json(), { id: 1, ...tom })
})

t.test('other media types get 415; PUT and POST do not take merge patches', async (t) => {
  const app = await withTom(t)
  for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
    const res = await patch(app, 1, { age: 4 }, { 'content-type': type })
    t.equal(res.statusCode, 415, type)
    t.equal(res.json().code, 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
  }
  t.equal((await patch(app, 1, { age: 4 }, { 'content-type': 'application/merge-patch+json; charset=utf-8' })).statusCode, 200, 'with a charset')
  t.equal((await app.inject({ method: 'PUT', url: '/cats/1', headers: mergePatch, payload: '{"age":5}' })).statusCode, 415, 'PUT')
  t.equal((await app.inject({ method: 'POST', url: '/cats', headers: mergePatch, payload: JSON.stringify(tom) })).statusCode, 415, 'POST')
  t.equal((await patch(app, 1, '{"age":', mergePatch)).statusCode, 400, 'malformed JSON')
  t.equal((await app.inject('/cats/1')).json().age, 4)
})

t.test('a patch that would make the cat too large: 413, nothing changed', async (t) => {
  const app = await build(t, { BODY_LIMIT: 2048 })
  await app.inject({ method: 'POST', url: '/cats', headers: { 'content-type': 'application/json' }, payload: tom })
  t.equal((await patch(app, 1, { a: 'x'.repeat(1500) })).statusCode, 200)
  const res = await patch(app, 1, { b: 'x'.repeat(1500) })
  t.equal(res.statusCode, 413)
  t.equal(res.json().code, 'CATS_ERR_CAT_TOO_LARGE')
  t.equal((await app.inject('/cats/1')).json().b, undefined)
})

t.test('with CATS_AUTH=required, a PATCH without a token gets 401 before its body is looked at', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  t.equal((await patch(app, 1, '{"name":null}', { 'content-type': 'text/plain' })).statusCode, 401)
  const token = bearer(tokenFor(app))
  await app.inject({ method: 'POST', url: '/cats', headers: { 'content-type': 'application/json', ...token }, payload: tom })
  const res = await patch(app, 1, { age: 4 }, { ...mergePatch, ...token })
  t.equal(res.statusCode, 200)
  t.strictSame(res.json(), { id: 1, ...tom, age: 4 }, 'with a token, patched')
})
