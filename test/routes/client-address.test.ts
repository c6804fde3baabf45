import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import serviceApp from '../../src/app.js'
import { hashPassword } from '../../src/auth/login/password.js'
import type { UserRecord } from '../../src/auth/login/users-file.js'
import { loadConfig, type ConfigInput } from '../../src/config.js'
import { serverOptions } from '../../src/http/server-options.js'
import { testConfig } from '../support/app.js'
import { freshKeyPrefix } from '../support/redis.js'
import { CHEAP_HASH } from '../support/cheap-users.js'

// Which client a failed login counts against, as the standalone server sets it up: TRUST_PROXY decides
// whose X-Forwarded-For is believed, and IPv6 clients count per /64.

// A cheap hash keeps the many failed logins fast.
const users: UserRecord[] = [{ id: 1, username: 'john', passwordHash: await hashPassword('right', CHEAP_HASH) }]

/** The standalone server's Fastify (proxy trust included), with the service registered. */
async function standalone (t: Test, settings: Partial<ConfigInput> = {}): Promise<FastifyInstance> {
  const config = loadConfig({ ...testConfig, LOG_LEVEL: 'silent', ...settings })
  const app = Fastify(serverOptions(config))
  await app.register(serviceApp, { config, users })
  t.teardown(() => app.close())
  return app
}

/** One wrong password for john: from `remoteAddress` (the TCP peer), with an X-Forwarded-For when given. */
const fail = async (app: FastifyInstance, remoteAddress: string, forwardedFor?: string): Promise<number> => (await app.inject({
  method: 'POST',
  url: '/auth/login',
  payload: { username: 'john', password: 'wrong' },
  remoteAddress,
  headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }
})).statusCode

/** Fifteen failures, the n-th with `forwardedFor(n)`: ten 401s, then 429s, when they all count as one client. */
async function fifteen (app: FastifyInstance, remoteAddress: string, forwardedFor?: (n: number) => string): Promise<number[]> {
  const statuses: number[] = []
  for (let n = 0; n < 15; n++) statuses.push(await fail(app, remoteAddress, forwardedFor?.(n)))
  return statuses
}

const ONE_CLIENT = [...Array(10).fill(401), ...Array(5).fill(429)]
const EVERY_ONE_NEW = Array(15).fill(401)

t.test('TRUST_PROXY=false: X-Forwarded-For is ignored, so rotating it does not escape the limit', async (t) => {
  const app = await standalone(t, { TRUST_PROXY: 'false' })
  t.strictSame(await fifteen(app, '127.0.0.1', (n) => `198.51.100.${n}`), ONE_CLIENT, 'the 11th failure is a 429')
})

t.test('TRUST_PROXY=1: only the address the one proxy appended is believed, not what the client wrote before it', async (t) => {
  const app = await standalone(t, { TRUST_PROXY: '1' })
  // The client sends a new X-Forwarded-For each time; the proxy (127.0.0.1) appends the address it saw.
  t.strictSame(await fifteen(app, '127.0.0.1', (n) => `198.51.100.${n}, 203.0.113.7`), ONE_CLIENT)
  t.equal(await fail(app, '127.0.0.1', '203.0.113.8'), 401, 'another client behind the proxy has its own budget')
  // The cost of a hop count: whoever reaches the service without the proxy writes the last entry itself.
  // Hence the README's rule that with a hop count, the proxies must be the only way in.
  t.strictSame(await fifteen(app, '127.0.0.1', (n) => `192.0.2.${n}`), EVERY_ONE_NEW)
})

t.test('TRUST_PROXY=<proxy addresses>: X-Forwarded-For is believed from the proxies only', async (t) => {
  const app = await standalone(t, { TRUST_PROXY: '10.0.0.5, 10.1.0.0/16' })
  t.strictSame(await fifteen(app, '127.0.0.1', (n) => `198.51.100.${n}`), ONE_CLIENT, 'a client that is no proxy cannot choose its address')
  t.strictSame(await fifteen(app, '10.0.0.5', (n) => `198.51.100.${n}, 203.0.113.7`), ONE_CLIENT, 'behind the proxy, the client it saw')
  t.strictSame(await fifteen(app, '10.1.2.3', (n) => `192.0.2.${n}`), EVERY_ONE_NEW, 'each client the proxies name is its own')
})

t.test('IPv6: the addresses of one /64 share one budget; other /64s have their own', async (t) => {
  const app = await standalone(t)
  const sameSlash64 = []
  for (let n = 1; n <= 15; n++) sameSlash64.push(await fail(app, `2001:db8:1:2:${n.toString(16)}::${n}`))
  t.strictSame(sameSlash64, ONE_CLIENT, 'a new address of the /64 for every try still meets the limit at the 11th')
  t.equal(await fail(app, '2001:db8:1:3::1'), 401, 'the next /64 is another client')
})

const { TEST_REDIS_URL } = process.env
if (TEST_REDIS_URL === undefined) {
  t.comment('TEST_REDIS_URL is not set: the /64 counting in Redis was not tested')
} else {
  const redisUrl = TEST_REDIS_URL
  t.test('IPv6 in Redis: one /64, one budget shared by every instance', async (t) => {
    const settings = { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: freshKeyPrefix(t, redisUrl) }
    const apps = [await standalone(t, settings), await standalone(t, settings)]
    const sameSlash64 = []
    for (let n = 1; n <= 15; n++) sameSlash64.push(await fail(apps[n % 2], `2001:db8:9:9::${n.toString(16)}`))
    t.strictSame(sameSlash64, ONE_CLIENT)
    t.equal(await fail(apps[0], '2001:db8:9:a::1'), 401, 'the next /64 is another client')
  })
}

t.test('IPv4-mapped IPv6 is the IPv4 client', async (t) => {
  const app = await standalone(t)
  const statuses = []
  for (let n = 0; n < 15; n++) statuses.push(await fail(app, n % 2 === 0 ? '203.0.113.9' : '::ffff:203.0.113.9'))
  t.strictSame(statuses, ONE_CLIENT)
})
