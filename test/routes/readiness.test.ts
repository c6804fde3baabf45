import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { READINESS_CACHE_MS, coalescedProbe } from '../../src/readiness.js'
import { build } from '../support/app.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { adminClient, freshServerSchema, urlWithSchema } from '../support/sql-schemas.js'

// Readiness is public: a probe of the database and Redis per request would let anyone send them a
// query per request. The answer is shared while a probe runs and reused for about a second.

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env
// The tests share nothing, and those of PostgreSQL and Redis spend their time waiting out caches and timeouts: two run at once.
t.jobs = 2

/** A probe whose calls are counted and whose answers the test settles. */
function controlledProbe (): { probe: () => Promise<string>, calls: () => number, settle: (answer: string) => void, fail: (error: Error) => void } {
  const pending: Array<{ resolve: (answer: string) => void, reject: (error: Error) => void }> = []
  let calls = 0
  return {
    probe: async () => {
      calls++
      return new Promise<string>((resolve, reject) => { pending.push({ resolve, reject }) })
    },
    calls: () => calls,
    settle: (answer) => { pending.shift()?.resolve(answer) },
    fail: (error) => { pending.shift()?.reject(error) }
  }
}

t.test('coalescedProbe: callers share the probe in flight, then its answer for maxAgeMs, then a new probe starts', async (t) => {
  let clock = 0
  const { probe, calls, settle, fail } = controlledProbe()
  const ready = coalescedProbe(probe, 1000, () => clock)
  const first = Array.from({ length: 100 }, async () => ready())
  t.equal(calls(), 1, '100 callers at once: one probe')
  clock += 5000
  const late = ready()
  t.equal(calls(), 1, 'a probe that runs longer than maxAgeMs is still the one shared: never two at once')
  settle('up')
  t.strictSame(new Set(await Promise.all([...first, late])), new Set(['up']), 'every caller got its answer')
  clock += 999
  t.equal(await ready(), 'up', 'reused within maxAgeMs of its end')
  t.equal(calls(), 1)
  clock += 1
  const second = ready()
  t.equal(calls(), 2, 'a new probe once the answer is maxAgeMs old')
  settle('down')
  t.equal(await second, 'down')
  clock += 1000
  const third = ready()
  fail(new Error('probe failed'))
  await t.rejects(third, { message: 'probe failed' }, 'a failed probe fails its callers')
  await t.rejects(ready(), { message: 'probe failed' }, 'and is reused like an answer')
  t.equal(calls(), 3)
})

t.test('coalescedProbe measures time with performance.now() unless told otherwise', async (t) => {
  let calls = 0
  const ready = coalescedProbe(async () => ++calls, 50)
  t.equal(await ready(), 1)
  t.equal(await ready(), 1)
  await sleep(80)
  t.equal(await ready(), 2)
})

t.test('readiness without dependencies is ready, and is about a second stale at most', async (t) => {
  t.equal(READINESS_CACHE_MS, 1000)
  const app = await build(t)
  const answers = await Promise.all(Array.from({ length: 20 }, async () => app.inject('/health/ready')))
  t.ok(answers.every((res) => res.statusCode === 200 && res.body === '{"ready":true}'))
})

/** Sends `count` readiness requests at once, then one every 10 ms for `forMs`; returns the statuses seen. */
async function flood (app: FastifyInstance, count: number, forMs: number): Promise<Set<number>> {
  const statuses = new Set<number>()
  for (const res of await Promise.all(Array.from({ length: count }, async () => app.inject('/health/ready')))) statuses.add(res.statusCode)
  const end = Date.now() + forMs
  while (Date.now() < end) {
    statuses.add((await app.inject('/health/ready')).statusCode)
    await sleep(10)
  }
  return statuses
}

/** How long until readiness answers `status`, polling every 50 ms (up to 5 s). */
async function timeUntil (app: FastifyInstance, status: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < 5000) {
    if ((await app.inject('/health/ready')).statusCode === status) break
    await sleep(50)
  }
  return Date.now() - started
}

/** Checks the probes made by a flood, and that outages (refused, then silent) show within about two seconds. */
async function checkDependency (t: Test, app: FastifyInstance, proxy: TcpProxy, probes: () => number, reason: string): Promise<void> {
  t.equal(await timeUntil(app, 200) < 5000, true, 'ready')
  const before = probes()
  const statuses = await flood(app, 100, 1500)
  t.strictSame([...statuses], [200])
  const made = probes() - before
  t.ok(made <= 3, `100 readiness requests at once, then one every 10 ms for 1.5 s: ${made} probes`)

  await proxy.stop()
  const refused = await timeUntil(app, 503)
  t.ok(refused < 2000, `refused connections reported in ${refused} ms`)
  t.strictSame((await app.inject('/health/ready')).json(), { ready: false, reason })
  await proxy.start()
  const back = await timeUntil(app, 200)
  t.ok(back < 5000, `back in ${back} ms`)

  proxy.silent = true
  t.teardown(() => { proxy.silent = false })
  const silent = await timeUntil(app, 503)
  // A probe's answer is reused for a second, and a silent dependency takes a probe's timeout (1 s) to count as down.
  t.ok(silent < 2500, `silence reported in ${silent} ms`)
  proxy.silent = false
}

if (TEST_DATABASE_URL === undefined) {
  t.comment('TEST_DATABASE_URL is not set: the PostgreSQL readiness tests were skipped')
} else {
  const target = new URL(TEST_DATABASE_URL)
  t.test('PostgreSQL: a flood of readiness requests makes a probe a second; an outage shows within 2 s', async (t) => {
    const schema = await freshServerSchema(t, await adminClient(t, TEST_DATABASE_URL), 'cats_ready')
    const proxy = new TcpProxy(target)
    await proxy.start()
    t.teardown(() => proxy.stop())
    let probes = 0
    proxy.watch = (chunk) => { if (chunk.includes('SELECT 1')) probes++ }
    const app = await build(t, { DATABASE_URL: urlWithSchema(proxy.url(target), schema) })
    await checkDependency(t, app, proxy, () => probes, 'database unavailable')
  })
}

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis readiness tests were skipped')
} else {
  const target = new URL(TEST_REDIS_URL)
  t.test('Redis: a flood of readiness requests makes a probe a second; an outage shows within 2 s', async (t) => {
    const proxy = new TcpProxy(target)
    await proxy.start()
    t.teardown(() => proxy.stop())
    let probes = 0
    proxy.watch = (chunk) => { probes += chunk.toString('latin1').toLowerCase().split('\r\nping\r\n').length - 1 }
    const app = await build(t, { REDIS_URL: proxy.url(target), REDIS_KEY_PREFIX: `cats-test-${randomBytes(6).toString('hex')}:` })
    await checkDependency(t, app, proxy, () => probes, 'redis unavailable')
  })
}
