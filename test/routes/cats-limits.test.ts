import t from 'tap'
import { build } from '../support/app.js'

// The bounds on the cats collection: CATS_MAX, a merged cat's size (BODY_LIMIT) and WRITE_HEAP_RATIO.

t.test('CATS_MAX: past the cap a create gets 507 and stores nothing', async (t) => {
  const app = await build(t, { CATS_MAX: 2 })
  const create = () => app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 1, breed: 'x' } })
  t.equal((await create()).statusCode, 201)
  t.equal((await create()).statusCode, 201)
  const full = await create()
  t.equal(full.statusCode, 507)
  t.strictSame(full.json(), { statusCode: 507, error: 'Insufficient Storage', message: 'The collection is full (2 cats); delete some first', code: 'CATS_ERR_COLLECTION_FULL' })
  t.equal((await app.inject('/cats')).json().length, 2)
  await app.inject({ method: 'DELETE', url: '/cats/1' })
  t.equal((await create()).statusCode, 201, 'a delete makes room again')
})

t.test('bounded memory: repeated merges cannot grow one cat past BODY_LIMIT (413, unchanged)', async (t) => {
  const app = await build(t, { BODY_LIMIT: 1024 })
  await app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 1, breed: 'x' } })
  const grow = (key: string) => app.inject({ method: 'PUT', url: '/cats/1', payload: { [key]: 'y'.repeat(400) } })
  t.equal((await grow('a')).statusCode, 200)
  t.equal((await grow('b')).statusCode, 200)
  const tooBig = await grow('c')
  t.equal(tooBig.statusCode, 413)
  t.strictSame(tooBig.json(), { statusCode: 413, error: 'Payload Too Large', message: 'The merged cat would be larger than 1024 bytes', code: 'CATS_ERR_CAT_TOO_LARGE' })
  t.strictSame(Object.keys((await app.inject('/cats/1')).json()), ['id', 'name', 'age', 'breed', 'a', 'b'])
  t.equal((await grow('a')).statusCode, 200, 'replacing a field of the same size still fits')
})

t.test('bounded memory: above WRITE_HEAP_RATIO creates and updates get 507, reads and deletes go on', async (t) => {
  const app = await build(t, { WRITE_HEAP_RATIO: 0.000001 })
  // under-pressure samples the heap once a second.
  await new Promise((resolve) => setTimeout(resolve, 1200))
  const created = await app.inject({ method: 'POST', url: '/cats', payload: { name: 'Tom', age: 1, breed: 'x' } })
  t.equal(created.statusCode, 507)
  t.strictSame(created.json(), { statusCode: 507, error: 'Insufficient Storage', message: 'The server is low on memory; delete some cats first', code: 'CATS_ERR_LOW_MEMORY' })
  t.equal((await app.inject({ method: 'PUT', url: '/cats/1', payload: { age: 2 } })).statusCode, 507)
  t.equal((await app.inject('/cats')).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/cats/1' })).statusCode, 200)
})
