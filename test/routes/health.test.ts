import t from 'tap'
import { build } from '../support/app.js'

// Liveness and readiness, and load shedding under pressure (health keeps answering).

t.test('overload: under pressure requests get 503 + Retry-After; health keeps answering', async (t) => {
  const app = await build(t, { MAX_HEAP_USED_BYTES: 1 })
  // under-pressure samples the heap once a second.
  await new Promise((resolve) => setTimeout(resolve, 1200))
  const shed = await app.inject('/cats')
  t.equal(shed.statusCode, 503)
  t.equal(shed.headers['retry-after'], '10')
  t.strictSame(shed.json(), { statusCode: 503, error: 'Service Unavailable', message: 'The server is overloaded; retry shortly', code: 'HTTP_ERR_OVERLOADED' })
  t.strictSame((await app.inject('/health')).json(), { status: 'ok' })
  const ready = await app.inject('/health/ready')
  t.equal(ready.statusCode, 503)
  t.strictSame(ready.json(), { ready: false, reason: 'overloaded' })
})

t.test('health: liveness and readiness', async (t) => {
  const app = await build(t)
  t.strictSame((await app.inject('/health')).json(), { status: 'ok' })
  const ready = await app.inject('/health/ready')
  t.equal(ready.statusCode, 200)
  t.strictSame(ready.json(), { ready: true })
})
