import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import type { ConfigInput } from '../../src/config.js'
import { build } from '../support/app.js'
import { countCommands, floodLogins, type Flood } from '../support/login-flood.js'
import { freshKeyPrefix } from '../support/redis.js'
import { TcpProxy } from '../support/tcp-proxy.js'

// Correct logins fired at once from one address, for one user: ten are checked at once (the pair's slots), the
// others wait in the process with one ask of the store per key at a time, and past LOGIN_SLOT_QUEUE_MAX they get
// 503 at once. Formerly every waiter asked Redis again every 20 ms for up to 2 s (here about 16 commands per login).
// test/stress/login-waiters.stress.ts sends 1,000 and reports the commands per second.

const LOGINS = 100
const QUEUE_MAX = 20
// Every login served costs a hash of the default cost (a fifth of a second of CPU), and a line of 20 keeps both
// hash threads busy for the whole wait. The Redis flood needs that line (20 waiters polling every 20 ms would pass
// its bound on commands many times over); the in-memory one, which counts no commands, has a line of 5.
const MEMORY_QUEUE_MAX = 5
const SLOT_WAIT_MS = 2000
const LOGIN = JSON.stringify({ username: 'john', password: 'changeme' })

/** Checks the answers of a flood with `queueMax` logins allowed in line; the number served. */
function checkAnswers (t: Test, { answers, refusedServerMs }: Flood, queueMax: number): number {
  const served = answers.filter((answer) => answer.status === 200).length
  const refused = answers.filter((answer) => answer.status === 503)
  t.equal(served + refused.length, LOGINS, 'every login is served or refused with 503')
  t.ok(served >= 10, `${served} served`)
  t.ok(refused.every((answer) => answer.code === 'AUTH_ERR_LOGINS_IN_PROGRESS' && answer.retryAfter === '1'), 'each 503 has its code and Retry-After: 1')
  // Ten hold the slots and queueMax wait in line; the others are refused without waiting (a wait lasts 2 s).
  const atOnce = refusedServerMs.filter((ms) => ms < SLOT_WAIT_MS / 2)
  t.ok(atOnce.length >= LOGINS - 10 - queueMax,
    `${atOnce.length} refused within ${SLOT_WAIT_MS / 2} ms of arriving (the slowest in ${Math.max(0, ...atOnce).toFixed(0)} ms; the client saw up to ${Math.max(...refused.map((answer) => answer.ms)).toFixed(0)} ms)`)
  return served
}

const config: Partial<ConfigInput> = { LOGIN_SLOT_QUEUE_MAX: QUEUE_MAX, HASH_QUEUE_MAX: 1000 }

t.test('memory: logins past the line are refused at once, those in line are served as slots free', async (t) => {
  checkAnswers(t, await floodLogins(await build(t, { ...config, LOGIN_SLOT_QUEUE_MAX: MEMORY_QUEUE_MAX }), LOGINS, LOGIN), MEMORY_QUEUE_MAX)
})

const { TEST_REDIS_URL } = process.env
if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis commands of waiting logins were not counted')
} else {
  t.test('redis: waiting logins send a few commands each, not one every 20 ms', async (t) => {
    const prefix = freshKeyPrefix(t, TEST_REDIS_URL)
    // One hash thread: slots free one at a time, and the hashes of the logins served during the wait are half as many.
    const app = await build(t, { ...config, HASH_CONCURRENCY: 1, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix })
    const redis = app.catsRedis?.client
    if (redis !== undefined && redis.status !== 'ready') await once(redis, 'ready')
    // The login protection's keys only (a login also starts a session, which is not counted here).
    const commands = await countCommands(TEST_REDIS_URL, `${prefix}login:`)
    t.teardown(commands.stop)
    const started = Date.now()
    const result = await floodLogins(app, LOGINS, LOGIN)
    const seconds = (Date.now() - started) / 1000
    await sleep(200)
    const sent = commands.total()
    const served = checkAnswers(t, result, QUEUE_MAX)
    t.comment(`${LOGINS} logins at once: ${served} served, ${sent} Redis commands in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s): ${JSON.stringify(Object.fromEntries(commands.byName))}`)
    // Per login served: the ask that takes its slot, the one that finds the next busy, and the settle; plus a poll
    // every 100 ms while some wait.
    t.ok(sent <= 3 * served + 50, `${sent} commands for ${served} logins served`)
    t.ok(sent < LOGINS, `fewer commands than logins (${sent})`)
  })

  t.test('redis silent: logins in line get 503 within 2 s, all of them, not one after another', async (t) => {
    const target = new URL(TEST_REDIS_URL)
    const proxy = new TcpProxy(target)
    await proxy.start()
    t.teardown(() => proxy.stop())
    const app = await build(t, { ...config, REDIS_URL: proxy.url(target), REDIS_KEY_PREFIX: freshKeyPrefix(t, TEST_REDIS_URL) })
    const redis = app.catsRedis?.client
    if (redis !== undefined && redis.status !== 'ready') await once(redis, 'ready')
    proxy.silent = true
    const started = Date.now()
    const answers = await Promise.all(Array.from({ length: QUEUE_MAX }, async () => {
      const res = await app.inject({ method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: LOGIN })
      return { status: res.statusCode, code: res.json().code, ms: Date.now() - started }
    }))
    t.ok(answers.every((answer) => answer.status === 503 && answer.code === 'AUTH_ERR_LIMITER_UNAVAILABLE'), 'each one 503 AUTH_ERR_LIMITER_UNAVAILABLE')
    const longest = Math.max(...answers.map((answer) => answer.ms))
    t.ok(longest < SLOT_WAIT_MS, `the last answered after ${longest} ms`)
  })
}
