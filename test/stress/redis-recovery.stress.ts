import t from 'tap'
import { silentRedis } from '../support/silent-redis.js'

// The silence of issue 37 (15 s, one login a second): long enough for ioredis's default reconnection delay to have
// grown to seconds, which alone would hold the recovery past 2 s.

const { TEST_REDIS_URL } = process.env

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis recovery stress test was skipped')
} else {
  t.test('after Redis is silent for 15 s, a login is served within 2 s of it answering again', async (t) => {
    const recovery = await silentRedis(t, TEST_REDIS_URL, 15_000, 1000, 60_000)
    t.ok(recovery.during.length >= 10 && recovery.during.every((status) => status === 503), `${recovery.during.length} logins during the silence, all 503`)
    t.comment(`first successful login sent ${recovery.sent} ms after Redis answered again, answered at ${recovery.answered} ms (${recovery.refused} refused before it)`)
    t.ok(recovery.sent < 2000, `a login sent ${recovery.sent} ms after Redis answered again succeeded`)
    t.match(recovery.logged, [{ msg: 'redis unavailable' }, { msg: 'redis available again', outageMs: Number }])
    t.equal(recovery.logged.length, 2, 'one line when the outage began, one when it ended')
  })
}
