import t from 'tap'
import { join } from 'node:path'
import { ConfigSchema, durationToSeconds, loadConfig, loadDatabaseConfig, parseTrustProxy, TRUST_PROXY_RULE } from '../src/config.js'

const SECRET = 'a-test-secret-that-is-32-chars-!'

/** Calls loadConfig and returns the message it throws, failing when it does not throw. */
function configError (source: Record<string, unknown>): string {
  try {
    loadConfig(source)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(source)}`)
}

t.test('the test secret is exactly 32 characters', async (t) => {
  t.equal(SECRET.length, 32)
})

t.test('loadConfig fills in the documented defaults', async (t) => {
  const config = loadConfig({ JWT_SECRET: SECRET })
  t.equal(config.JWT_SECRET, SECRET)
  t.equal(config.JWT_EXPIRES_IN, '60m')
  t.equal(config.PORT, 3000)
  t.equal(config.HOST, '127.0.0.1')
  t.equal(config.LOG_LEVEL, 'info')
  t.equal(config.CATS_AUTH, 'public', '/cats is public by default')
  t.equal(config.NODE_ENV, 'development')
  t.equal(config.TRUST_PROXY, 'false')
  t.equal(config.DOCS_ENABLED, true)
})

t.test('every setting with a default in the schema gets it', async (t) => {
  const values: Record<string, unknown> = loadConfig({ JWT_SECRET: SECRET })
  const defaulted: string[] = []
  for (const [name, schema] of Object.entries(ConfigSchema.properties)) {
    if (!('default' in schema)) continue
    defaulted.push(name)
    t.strictSame(values[name], schema.default, name)
  }
  t.ok(defaulted.length >= 10, `${defaulted.length} settings have defaults`)
  t.strictSame(Object.keys(values).sort(), ['JWT_SECRET', 'durations', ...defaulted].sort(), 'nothing else is added but the decoded durations')
})

t.test('optional settings without defaults stay absent', async (t) => {
  const config = loadConfig({ JWT_SECRET: SECRET })
  t.notOk('USERS_FILE' in config)
  t.notOk('JWT_ISSUER' in config)
  t.notOk('JWT_AUDIENCE' in config)
})

t.test('values from environment strings are coerced to their types', async (t) => {
  const config = loadConfig({
    JWT_SECRET: SECRET,
    PORT: '8080',
    DOCS_ENABLED: 'false',
    CATS_MAX: '5',
    HASH_QUEUE_MAX: '0',
    CATS_AUTH: 'required',
    LOG_LEVEL: 'silent',
    JWT_EXPIRES_IN: '7d',
    HOST: '0.0.0.0',
    USERS_FILE: '/etc/users.json',
    JWT_ISSUER: 'issuer',
    JWT_AUDIENCE: 'audience',
    NODE_ENV: 'production'
  })
  t.equal(config.PORT, 8080)
  t.equal(config.DOCS_ENABLED, false)
  t.equal(config.CATS_MAX, 5)
  t.equal(config.HASH_QUEUE_MAX, 0)
  t.equal(config.CATS_AUTH, 'required')
  t.equal(config.LOG_LEVEL, 'silent')
  t.equal(config.JWT_EXPIRES_IN, '7d')
  t.equal(config.HOST, '0.0.0.0')
  t.equal(config.USERS_FILE, '/etc/users.json')
  t.equal(config.JWT_ISSUER, 'issuer')
  t.equal(config.JWT_AUDIENCE, 'audience')
  t.equal(config.NODE_ENV, 'production')
  t.equal(loadConfig({ JWT_SECRET: SECRET, DOCS_ENABLED: 'true' }).DOCS_ENABLED, true)
})

t.test('plugin options may give typed values instead of strings', async (t) => {
  const config = loadConfig({ JWT_SECRET: SECRET, PORT: 0, DOCS_ENABLED: false, CATS_AUTH: 'required' })
  t.equal(config.PORT, 0)
  t.equal(config.DOCS_ENABLED, false)
  t.equal(config.CATS_AUTH, 'required')
})

t.test('loadConfig reads only what it is given, never process.env', async (t) => {
  const saved = process.env.PORT
  process.env.PORT = '1234'
  t.teardown(() => {
    if (saved === undefined) delete process.env.PORT
    else process.env.PORT = saved
  })
  t.equal(loadConfig({ JWT_SECRET: SECRET }).PORT, 3000)
})

t.test('loadConfig does not change the object it is given', async (t) => {
  const source = { JWT_SECRET: SECRET, PORT: '8080', SOMETHING_ELSE: 'kept' }
  loadConfig(source)
  t.strictSame(source, { JWT_SECRET: SECRET, PORT: '8080', SOMETHING_ELSE: 'kept' })
})

t.test('a missing JWT_SECRET throws, naming it', async (t) => {
  t.match(configError({}), /JWT_SECRET/)
  t.match(configError({ PORT: '3000' }), /JWT_SECRET/)
})

t.test('JWT_ALGORITHM: HS256 by default and needs JWT_SECRET; the asymmetric ones do not; nothing else is taken', async (t) => {
  t.equal(loadConfig({ JWT_SECRET: SECRET }).JWT_ALGORITHM, 'HS256')
  t.match(configError({ JWT_ALGORITHM: 'HS256' }), /^env must have required property 'JWT_SECRET'$/)
  for (const algorithm of ['EdDSA', 'ES256', 'RS256']) t.equal(loadConfig({ JWT_ALGORITHM: algorithm }).JWT_SECRET, undefined, algorithm)
  for (const algorithm of ['none', 'HS512', 'eddsa']) {
    t.equal(configError({ JWT_SECRET: SECRET, JWT_ALGORITHM: algorithm }), 'env/JWT_ALGORITHM must match pattern "^(HS256|EdDSA|ES256|RS256)$"', algorithm)
  }
})

t.test('a JWT_SECRET shorter than 32 characters throws, naming it and the length', async (t) => {
  const message = configError({ JWT_SECRET: SECRET.slice(1) })
  t.match(message, /JWT_SECRET/)
  t.match(message, /32/)
  t.match(configError({ JWT_SECRET: '' }), /JWT_SECRET/)
})

t.test('a bad PORT throws, naming it', async (t) => {
  for (const port of ['abc', '80.5', '-1', '65536', '', 'true']) {
    t.match(configError({ JWT_SECRET: SECRET, PORT: port }), /PORT/, `PORT=${JSON.stringify(port)}`)
  }
  t.equal(loadConfig({ JWT_SECRET: SECRET, PORT: '65535' }).PORT, 65535, 'the top of the range is accepted')
})

t.test('a bad JWT_EXPIRES_IN throws, naming it', async (t) => {
  for (const duration of ['60', '60x', '1w', '0m', '-5m', '1.5h', '60 m', '', '1234567890s']) {
    t.match(configError({ JWT_SECRET: SECRET, JWT_EXPIRES_IN: duration }), /JWT_EXPIRES_IN/, `JWT_EXPIRES_IN=${JSON.stringify(duration)}`)
  }
})

t.test('other bad values throw, naming the variable', async (t) => {
  const cases: Record<string, string> = {
    LOG_LEVEL: 'loud',
    CATS_AUTH: 'yes',
    DOCS_ENABLED: 'maybe',
    HOST: '',
    BODY_LIMIT: '10',
    HASH_CONCURRENCY: '0',
    LOGIN_FAILURE_WINDOW: 'soon',
    LOGIN_MAX_FAILURES: '0',
    USERS_FILE: ''
  }
  for (const [name, value] of Object.entries(cases)) {
    t.match(configError({ JWT_SECRET: SECRET, [name]: value }), new RegExp(name), `${name}=${JSON.stringify(value)}`)
  }
})

t.test('several bad values are reported at once', async (t) => {
  const message = configError({ JWT_SECRET: 'short', PORT: 'abc', JWT_EXPIRES_IN: 'forever', CATS_AUTH: 'sometimes' })
  for (const name of ['JWT_SECRET', 'PORT', 'JWT_EXPIRES_IN', 'CATS_AUTH']) t.match(message, new RegExp(name), name)
  t.match(configError({ PORT: 'abc' }), /JWT_SECRET[^]*PORT|PORT[^]*JWT_SECRET/, 'a missing variable and a bad one together')
})

t.test('a bad choice says which values are expected', async (t) => {
  t.match(configError({ JWT_SECRET: SECRET, LOG_LEVEL: 'loud' }), /info/, 'LOG_LEVEL lists its levels')
  t.match(configError({ JWT_SECRET: SECRET, CATS_AUTH: 'yes' }), /required/, 'CATS_AUTH lists public and required')
})

t.test('durationToSeconds converts s, m, h and d', async (t) => {
  t.equal(durationToSeconds('1s'), 1)
  t.equal(durationToSeconds('45s'), 45)
  t.equal(durationToSeconds('60m'), 3600)
  t.equal(durationToSeconds('1m'), 60)
  t.equal(durationToSeconds('2h'), 7200)
  t.equal(durationToSeconds('7d'), 604_800)
  t.equal(durationToSeconds('999999999s'), 999_999_999, 'nine digits')
})

t.test('durationToSeconds accepts exactly what the config schema accepts', async (t) => {
  for (const duration of ['60m', '1s', '30d']) {
    t.equal(loadConfig({ JWT_SECRET: SECRET, JWT_EXPIRES_IN: duration }).JWT_EXPIRES_IN, duration)
    t.doesNotThrow(() => durationToSeconds(duration))
  }
})

t.test('durationToSeconds throws for a bad value, quoting it', async (t) => {
  for (const duration of ['', '60', 'm', '0m', '060m', '-1m', '1.5h', '1w', '1M', ' 1m', '1m ', '1 m', '1234567890s', '1mm']) {
    t.throws(() => durationToSeconds(duration), {
      message: `Invalid duration "${duration}": expected a whole number followed by s, m, h or d`
    }, JSON.stringify(duration))
  }
})

t.test('TRUST_PROXY=true is refused with a message naming the safe forms; every other failure is still reported', async (t) => {
  for (const value of ['true', 'TRUE', 'True', ' true', 'yes', '1,true', '100']) {
    t.equal(configError({ JWT_SECRET: SECRET, TRUST_PROXY: value }), TRUST_PROXY_RULE, JSON.stringify(value))
  }
  t.match(TRUST_PROXY_RULE, /^env\/TRUST_PROXY must be false, a hop count .*, or the proxies' addresses\/CIDRs, comma-separated .*; true is refused/)
  t.equal(configError({ TRUST_PROXY: 'true', PORT: 'x' }),
    `env must have required property 'JWT_SECRET', env/PORT must be integer, ${TRUST_PROXY_RULE}`, 'all the failures, in one message')
  t.equal(loadConfig({ JWT_SECRET: SECRET, TRUST_PROXY: 'false' }).TRUST_PROXY, 'false')
  t.equal(loadConfig({ JWT_SECRET: SECRET, TRUST_PROXY: '1' }).TRUST_PROXY, '1')
  t.equal(loadConfig({ JWT_SECRET: SECRET, TRUST_PROXY: '10.0.0.1, 10.1.0.0/16,::1,fd00::/8' }).TRUST_PROXY, '10.0.0.1, 10.1.0.0/16,::1,fd00::/8')
  t.equal(loadConfig({ JWT_SECRET: SECRET, TRUST_PROXY: 'loopback,uniquelocal' }).TRUST_PROXY, 'loopback,uniquelocal')
})

t.test('a .env file that cannot be read fails as it is', async (t) => {
  const dir = t.testdir({ '.env': {} })
  t.throws(() => loadConfig({ JWT_SECRET: SECRET }, { envFile: join(dir, '.env') }), { code: 'EISDIR' })
})

t.test('parseTrustProxy: "false" trusts nobody, and "true" is refused', async (t) => {
  t.equal(parseTrustProxy('false'), false)
  t.throws(() => parseTrustProxy('true'), { message: TRUST_PROXY_RULE })
  t.throws(() => parseTrustProxy('TRUE'), { message: TRUST_PROXY_RULE })
})

t.test('parseTrustProxy: a hop count becomes a function trusting fewer hops', async (t) => {
  const trust = parseTrustProxy('2')
  if (typeof trust !== 'function') throw new Error(`expected a function, got ${JSON.stringify(trust)}`)
  t.equal(trust('10.0.0.1', 0), true)
  t.equal(trust('10.0.0.1', 1), true)
  t.equal(trust('10.0.0.1', 2), false)
  t.equal(trust('10.0.0.1', 3), false)

  const none = parseTrustProxy('0')
  if (typeof none !== 'function') throw new Error('expected a function for 0')
  t.equal(none('10.0.0.1', 0), false, '0 hops trusts nobody')
})

t.test('parseTrustProxy: addresses and CIDRs are passed on as the string', async (t) => {
  t.equal(parseTrustProxy('127.0.0.1,10.0.0.0/8'), '127.0.0.1,10.0.0.0/8')
  t.equal(parseTrustProxy('loopback'), 'loopback')
  t.equal(parseTrustProxy('::1'), '::1')
  t.equal(parseTrustProxy('1.5'), '1.5', 'not a hop count')
})

t.test('loadDatabaseConfig reads only DATABASE_URL, DATABASE_SCHEMA and DATABASE_POOLER and checks them', async (t) => {
  const none = { DATABASE_POOLER: 'none' }
  t.strictSame(loadDatabaseConfig({ DATABASE_URL: 'pglite://memory', JWT_SECRET: 'short' }), { DATABASE_URL: 'pglite://memory', ...none })
  t.strictSame(loadDatabaseConfig({ DATABASE_URL: 'pglite://memory', DATABASE_SCHEMA: 'cats' }), { DATABASE_URL: 'pglite://memory', DATABASE_SCHEMA: 'cats', ...none })
  t.strictSame(loadDatabaseConfig({ DATABASE_POOLER: 'transaction' }), { DATABASE_POOLER: 'transaction' })
  t.strictSame(loadDatabaseConfig({}), none)
  t.throws(() => loadDatabaseConfig({ DATABASE_URL: 'mysql://x' }), /DATABASE_URL must match pattern/)
  t.throws(() => loadDatabaseConfig({ DATABASE_SCHEMA: 'Cats' }), /DATABASE_SCHEMA must match pattern/)
})

t.test('DATABASE_SCHEMA: a lowercase PostgreSQL name of at most 63 characters, not one PostgreSQL reserves', async (t) => {
  for (const schema of ['cats', 'cats_service', '_x', 'a$1', 'x'.repeat(63)]) {
    t.equal(loadConfig({ JWT_SECRET: SECRET, DATABASE_SCHEMA: schema }).DATABASE_SCHEMA, schema)
  }
  t.equal(loadConfig({ JWT_SECRET: SECRET }).DATABASE_SCHEMA, undefined, 'unset: the connection\'s current schema')
  for (const schema of ['', 'Cats', '1cats', 'pg_cats', 'a.b', 'a"b', 'x'.repeat(64)]) {
    t.throws(() => loadConfig({ JWT_SECRET: SECRET, DATABASE_SCHEMA: schema }), /DATABASE_SCHEMA must match pattern/, JSON.stringify(schema))
  }
})

t.test('envFile: a .env file fills in what the source does not set, and the source wins', async (t) => {
  const dir = t.testdir({ '.env': `JWT_SECRET=${SECRET}\nPORT=4000\nCATS_AUTH=required\nDATABASE_URL=pglite://from-file\n` })
  const envFile = join(dir, '.env')
  const config = loadConfig({ CATS_AUTH: 'public' }, { envFile })
  t.equal(config.JWT_SECRET, SECRET, 'from the file')
  t.equal(config.PORT, 4000, 'from the file, coerced')
  t.equal(config.CATS_AUTH, 'public', 'the source wins over the file')
  t.strictSame(loadDatabaseConfig({}, { envFile }), { DATABASE_URL: 'pglite://from-file', DATABASE_POOLER: 'none' })
  t.strictSame(loadDatabaseConfig({ DATABASE_URL: 'pglite://memory' }, { envFile }), { DATABASE_URL: 'pglite://memory', DATABASE_POOLER: 'none' })
  t.equal(loadConfig({ JWT_SECRET: SECRET }, { envFile: join(dir, 'missing.env') }).PORT, 3000, 'a missing file is no error')
})

t.test('with refresh tokens, a REFRESH_TOKEN_TTL shorter than JWT_EXPIRES_IN is refused, naming both', async (t) => {
  const message = configError({ JWT_SECRET: SECRET, REFRESH_TOKENS: 'true', REFRESH_TOKEN_TTL: '30m', JWT_EXPIRES_IN: '1h' })
  t.match(message, /REFRESH_TOKEN_TTL \(30m\)/, 'names the refresh token\'s lifetime')
  t.match(message, /JWT_EXPIRES_IN \(1h\)/, 'and the access token\'s')
  t.match(configError({ JWT_SECRET: SECRET, REFRESH_TOKENS: 'true', REFRESH_TOKEN_TTL: '59s', JWT_EXPIRES_IN: '1m' }), /REFRESH_TOKEN_TTL/, 'by a second')
  t.equal(loadConfig({ JWT_SECRET: SECRET, REFRESH_TOKENS: 'true', REFRESH_TOKEN_TTL: '60m', JWT_EXPIRES_IN: '1h' }).REFRESH_TOKEN_TTL, '60m', 'equal lifetimes')
  t.equal(loadConfig({ JWT_SECRET: SECRET, REFRESH_TOKENS: 'true', JWT_EXPIRES_IN: '7d' }).JWT_EXPIRES_IN, '7d', 'the default 30d is longer')
  t.equal(loadConfig({ JWT_SECRET: SECRET, REFRESH_TOKEN_TTL: '1m', JWT_EXPIRES_IN: '1h' }).REFRESH_TOKEN_TTL, '1m',
    'without refresh tokens a session lives as long as its one access token, whatever REFRESH_TOKEN_TTL says')
})

t.test('REDIS_CLUSTER_NODES: host:port seeds, comma-separated; never beside REDIS_URL', async (t) => {
  t.equal(loadConfig({ JWT_SECRET: SECRET, REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b:7001,[::1]:7002' }).REDIS_CLUSTER_NODES, '10.0.0.1:7000, redis-b:7001,[::1]:7002')
  t.match(configError({ JWT_SECRET: SECRET, REDIS_CLUSTER_NODES: 'redis://a:7000' }), /env\/REDIS_CLUSTER_NODES must match pattern/)
  t.match(configError({ JWT_SECRET: SECRET, REDIS_CLUSTER_NODES: 'a:7000,' }), /env\/REDIS_CLUSTER_NODES must match pattern/)
  t.throws(() => loadConfig({ JWT_SECRET: SECRET, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: '127.0.0.1:7000' }),
    { message: 'env/REDIS_URL and env/REDIS_CLUSTER_NODES must not both be set: name one Redis server or one Redis Cluster' })
})

t.test('REDIS_WAIT_REPLICAS: 0 (no wait) by default, a whole number, only with a Redis', async (t) => {
  t.equal(loadConfig({ JWT_SECRET: SECRET }).REDIS_WAIT_REPLICAS, 0)
  t.equal(loadConfig({ JWT_SECRET: SECRET, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_WAIT_REPLICAS: '2' }).REDIS_WAIT_REPLICAS, 2)
  t.equal(loadConfig({ JWT_SECRET: SECRET, REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_WAIT_REPLICAS: 1 }).REDIS_WAIT_REPLICAS, 1)
  t.match(configError({ JWT_SECRET: SECRET, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_WAIT_REPLICAS: '-1' }), /env\/REDIS_WAIT_REPLICAS must be >= 0/)
  t.match(configError({ JWT_SECRET: SECRET, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_WAIT_REPLICAS: '1.5' }), /env\/REDIS_WAIT_REPLICAS must be integer/)
  t.throws(() => loadConfig({ JWT_SECRET: SECRET, REDIS_WAIT_REPLICAS: 1 }),
    { message: 'env/REDIS_WAIT_REPLICAS needs env/REDIS_URL or env/REDIS_CLUSTER_NODES: it counts the replicas of their masters' })
})

t.test('loadConfig decodes every duration once, in the unit its name says', async (t) => {
  t.strictSame(loadConfig({ JWT_SECRET: SECRET }).durations, {
    accessTokenSeconds: 3600,
    refreshTokenSeconds: 30 * 86_400,
    refreshReuseWindowMs: 10_000,
    loginFailureWindowMs: 15 * 60_000,
    loginLockMs: 60_000,
    loginLockMaxMs: 3_600_000,
    loginClientFailureWindowMs: 15 * 60_000
  }, 'the defaults')
  const config = loadConfig({ JWT_SECRET: SECRET, JWT_EXPIRES_IN: '2h', REFRESH_TOKEN_TTL: '3h', REFRESH_REUSE_WINDOW: '0', LOGIN_LOCK_MAX: '90s' })
  t.equal(config.JWT_EXPIRES_IN, '2h', 'the setting stays as written')
  t.match(config.durations, { accessTokenSeconds: 7200, refreshTokenSeconds: 10_800, refreshReuseWindowMs: 0, loginLockMaxMs: 90_000 })
})
