import t from 'tap'
import { login, silentRedis } from './support/silent-redis.js'

// Redis goes silent (the connection stays open, nothing answers, and what was sent meanwhile is lost), then answers
// again: logins are served again within 2 s, and the log says once that the outage began and once that it ended.
// Two logins during the silence are enough: before the fix, every later reply went to a command that had already
// timed out, so each new one timed out in turn and logins stayed 503 for as long as one cared to try.
// test/stress/redis-recovery.stress.ts does the same with a 15 s silence.

const { TEST_REDIS_URL } = process.env
const RECOVERY_MS = 2000

if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the Redis recovery test was skipped')
} else {
  t.test('after a silent Redis answers again, a login is served within 2 s and the recovery is logged once', async (t) => {
    const recovery = await silentRedis(t, TEST_REDIS_URL, 2000, 1000, 10_000)
    t.ok(recovery.during.length >= 2 && recovery.during.every((status) => status === 503), `${recovery.during.length} logins while Redis is silent, all 503`)
    t.comment(`first successful login sent ${recovery.sent} ms after Redis answered again, answered at ${recovery.answered} ms (${recovery.refused} refused before it)`)
    t.ok(recovery.sent < RECOVERY_MS, `a login sent ${recovery.sent} ms after Redis answered again succeeded`)
    for (let i = 0; i < 3; i++) t.equal((await recovery.app.inject(login)).statusCode, 200, 'and the next ones too')
    t.strictSame((await recovery.app.inject({ url: '/health/ready' })).json(), { ready: true })
    t.match(recovery.logged, [{ msg: 'redis unavailable' }, { msg: 'redis available again', outageMs: Number }],
      'the outage is logged once when it started, and once when it ended, with its length')
    t.equal(recovery.logged.length, 2)
  })
}
