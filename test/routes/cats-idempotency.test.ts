import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { bearer, build, tokenFor } from '../support/app.js'
import { hashPassword } from '../../src/auth/login/password.js'
import { CHEAP_HASH } from '../support/cheap-users.js'

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

t.test('public creates: each client address keeps its own quota of keys, and its oldest go first', async (t) => {
  const app = await build(t, { IDEMPOTENCY_CLIENT_KEYS_MAX: 3 })
  const from = (remoteAddress: string, key: string) => app.inject({
    method: 'POST', url: '/cats', payload: { ...tom, name: key }, headers: { 'idempotency-key': key }, remoteAddress
  })
  const replayed = async (remoteAddress: string, key: string): Promise<boolean> => (await from(remoteAddress, key)).headers['idempotent-replayed'] === 'true'
  await from('203.0.113.1', 'victim')
  for (let n = 1; n <= 20; n++) await from('198.51.100.7', `noisy-${n}`)
  t.equal(await replayed('203.0.113.1', 'victim'), true, 'another client\'s key still replays')
  t.equal(await replayed('198.51.100.7', 'noisy-20'), true)
  t.equal(await replayed('198.51.100.7', 'noisy-17'), false, 'the noisy client\'s own oldest keys went')
  // Keys stay shared when creates are public: the victim's key answers whoever repeats it.
  t.equal(await replayed('198.51.100.7', 'victim'), true)
})

t.test('public creates: the addresses of one IPv6 /64 share one quota', async (t) => {
  const app = await build(t, { IDEMPOTENCY_CLIENT_KEYS_MAX: 2 })
  const from = (remoteAddress: string, key: string) => app.inject({
    method: 'POST', url: '/cats', payload: tom, headers: { 'idempotency-key': key }, remoteAddress
  })
  await from('2001:db8:5:5::1', 'a')
  await from('2001:db8:5:5::2', 'b')
  await from('2001:db8:5:6::1', 'other')
  await from('2001:db8:5:5:ffff::3', 'c')
  t.equal((await from('2001:db8:5:5::9', 'a')).headers['idempotent-replayed'], undefined, 'a new address of the /64 pushed out its first key')
  t.equal((await from('2001:db8:5:6::1', 'other')).headers['idempotent-replayed'], 'true', 'the next /64 kept its own')
})

t.test('creates with a token: the quota is the user\'s, whatever address they send from', async (t) => {
  const app = await build(t, { CATS_AUTH: 'required', IDEMPOTENCY_CLIENT_KEYS_MAX: 2 })
  const john = bearer(tokenFor(app, 1, 'john'))
  const chris = bearer(tokenFor(app, 2, 'chris'))
  const create = (auth: Record<string, string>, key: string, remoteAddress: string) => app.inject({
    method: 'POST', url: '/cats', payload: tom, headers: { ...auth, 'idempotency-key': key }, remoteAddress
  })
  await create(chris, 'k', '10.0.0.1')
  for (let n = 1; n <= 3; n++) await create(john, `k-${n}`, `10.0.0.${n}`)
  t.equal((await create(john, 'k-1', '10.0.0.9')).headers['idempotent-replayed'], undefined, 'john\'s oldest went, though each came from another address')
  t.equal((await create(chris, 'k', '10.0.0.1')).headers['idempotent-replayed'], 'true', 'chris, from john\'s first address, kept his')
})

for (const [store, config] of [['memory', {}], ['PGlite', { DATABASE_URL: 'pglite://memory' }]] as const) {
  t.test(`${store}: the users of ids 1 and "1" have keys and quotas of their own`, async (t) => {
    const passwordHash = await hashPassword('pw', CHEAP_HASH)
    const app = await build(t, { ...config, CATS_AUTH: 'required', IDEMPOTENCY_CLIENT_KEYS_MAX: 2 }, {
      users: [{ id: 1, username: 'alice', passwordHash }, { id: '1', username: 'bob', passwordHash }]
    })
    const login = async (username: string): Promise<Record<string, string>> =>
      bearer((await app.inject({ method: 'POST', url: '/auth/login', payload: { username, password: 'pw' } })).json().access_token)
    const [alice, bob] = [await login('alice'), await login('bob')]
    const create = (auth: Record<string, string>, key: string, body: Record<string, unknown> = tom) =>
      app.inject({ method: 'POST', url: '/cats', payload: body, headers: { ...auth, 'idempotency-key': key } })
    const first = await create(alice, 'order-1')
    t.equal(first.statusCode, 201)
    const bobs = await create(bob, 'order-1')
    t.equal(bobs.statusCode, 201)
    t.equal(bobs.headers['idempotent-replayed'], undefined, 'bob\'s key is not alice\'s: he does not get her answer')
    t.not(bobs.json().id, first.json().id, 'bob created a cat of his own')
    t.equal((await create(bob, 'order-2', { ...tom, name: 'Other' })).statusCode, 201)
    t.equal((await create(bob, 'order-3')).statusCode, 201)
    t.equal((await create(alice, 'order-1')).headers['idempotent-replayed'], 'true', 'bob\'s keys did not push alice\'s out of a shared quota')
  })
}
