import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { bearer, build, tokenFor } from '../support/app.js'

const tom = { name: 'Tom', age: 3, breed: 'Siamese' }
const create = (app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/cats', payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } })

t.test('a repeat with the same key and body gets the same status and body, marked as replayed, and creates nothing', async (t) => {
  const app = await build(t)
  const first = await create(app, tom, { 'idempotency-key': 'order-1' })
  t.equal(first.statusCode, 201)
  t.equal(first.headers['idempotent-replayed'], undefined)
  const again = await create(app, { breed: 'Siamese', age: 3, name: 'Tom', color: 'ignored' }, { 'idempotency-key': 'order-1' })
  t.equal(again.statusCode, 201)
  t.equal(again.body, first.body, 'the same body, byte for byte')
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(app.catsStore.count(), 1)
  const plain = await create(app, tom)
  t.equal(plain.json().id, 2, 'without a key every create is new')
})

t.test('the same key with a different body is a 422 and creates nothing', async (t) => {
  const app = await build(t)
  await create(app, tom, { 'idempotency-key': 'k' })
  const res = await create(app, { ...tom, age: 4 }, { 'idempotency-key': 'k' })
  t.equal(res.statusCode, 422)
  t.equal(res.json().code, 'CATS_ERR_IDEMPOTENCY_KEY_REUSED')
  t.equal(app.catsStore.count(), 1)
})

t.test('a key must be 1-255 visible ASCII characters, else a 400 in the validation shape', async (t) => {
  const app = await build(t)
  t.equal((await create(app, tom, { 'idempotency-key': 'x'.repeat(255) })).statusCode, 201)
  t.equal((await create(app, tom, { 'idempotency-key': '!~' })).statusCode, 201)
  for (const bad of ['', 'x'.repeat(256), 'has space', 'tab\there', 'caf\u00e9']) {
    const res = await create(app, tom, { 'idempotency-key': bad })
    t.equal(res.statusCode, 400, JSON.stringify(bad))
    t.equal(res.json().code, 'FST_ERR_VALIDATION')
    t.strictSame(res.json().validation.map((issue: { field: string }) => issue.field), ['headers.idempotency-key'])
  }
  t.equal(app.catsStore.count(), 2)
})

t.test('keys are per user when creates need a token', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required' })
  const john = bearer(tokenFor(app, 1, 'john'))
  const chris = bearer(tokenFor(app, 2, 'chris'))
  t.equal((await create(app, tom, { ...john, 'idempotency-key': 'k' })).statusCode, 201)
  const other = await create(app, { ...tom, name: 'Other' }, { ...chris, 'idempotency-key': 'k' })
  t.equal(other.statusCode, 201, 'another user\'s key is another key')
  t.equal(other.headers['idempotent-replayed'], undefined)
  const replay = await create(app, tom, { ...john, 'idempotency-key': 'k' })
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal(app.catsStore.count(), 2)
})

t.test('the header is in the OpenAPI document', async (t) => {
  const app = await build(t)
  const spec = (await app.inject('/docs/json')).json()
  const parameters = spec.paths['/cats'].post.parameters as Array<{ name: string, in: string }>
  t.ok(parameters.some((parameter) => parameter.name === 'idempotency-key' && parameter.in === 'header'))
  t.ok(spec.paths['/cats'].post.responses['409'])
  t.ok(spec.paths['/cats'].post.responses['422'])
})
