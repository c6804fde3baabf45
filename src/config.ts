import { envSchema } from 'env-schema'
import { Type, type Static } from '@sinclair/typebox'
import type { ErrorObject } from 'ajv'

const Duration = Type.String({
  pattern: '^[1-9][0-9]{0,8}(s|m|h|d)$',
  description: 'A whole number followed by s, m, h or d, e.g. 60m or 7d'
})

/** One of the given words; the pattern makes a validation error name them all. */
const OneOf = (words: string[], fallback: string, description: string) =>
  Type.String({ pattern: `^(${words.join('|')})$`, default: fallback, description })

/** One proxy address, CIDR or proxy-addr range name (loopback, linklocal, uniquelocal). */
const PROXY = '(loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]*[:.][0-9A-Fa-f:.]*(/[0-9]{1,3})?)'

/** One Redis Cluster seed: `host:port`, an IPv6 address in brackets. */
const SEED = '(\\[[0-9A-Fa-f:.]+\\]|[^,\\s:\\[\\]]+):[0-9]{1,5}'

/**
 * The forms of TRUST_PROXY that do not let a client choose its own address: nobody trusted, a hop count
 * (at most 99), or a list of proxies. `true` is not one: it believes every X-Forwarded-For, whoever sends it.
 */
const TRUST_PROXY_FORMS = new RegExp(`^(false|[0-9]{1,2}|${PROXY}( *, *${PROXY})*)$`)

/** What a refused TRUST_PROXY is told, in place of the pattern. */
export const TRUST_PROXY_RULE = 'env/TRUST_PROXY must be false, a hop count (the number of proxies in front of the service, e.g. 1), ' +
  'or the proxies\' addresses/CIDRs, comma-separated (e.g. 10.0.0.1,192.168.0.0/16); true is refused: ' +
  'it believes any X-Forwarded-For, so every client could choose its own address'

/**
 * Every setting of the service. The server reads them from the environment;
 * a host app passes the same keys as plugin options. Both go through this schema.
 */
const ConfigProperties = {
  JWT_ALGORITHM: OneOf(['HS256', 'EdDSA', 'ES256', 'RS256'], 'HS256', '`HS256` signs with `JWT_SECRET`; `EdDSA`, `ES256` or `RS256` with `JWT_PRIVATE_KEY` and publishes the public key at `/.well-known/jwks.json`'),
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32, description: 'HS256 secret, at least 32 characters: signs with `HS256`; with another algorithm it only verifies the HS256 tokens still live' })),
  JWT_PRIVATE_KEY: Type.Optional(Type.String({ minLength: 1, description: 'PEM private key that signs with `EdDSA` (Ed25519), `ES256` (P-256) or `RS256` (RSA, 2048 bits or more)' })),
  JWT_PRIVATE_KEY_FILE: Type.Optional(Type.String({ minLength: 1, description: 'File holding `JWT_PRIVATE_KEY`, read at start' })),
  JWT_VERIFY_KEYS: Type.Optional(Type.String({ minLength: 1, description: 'PEM public keys, concatenated, that verify tokens but never sign: the previous key until its tokens expire, the next one before it signs' })),
  JWT_VERIFY_KEYS_FILE: Type.Optional(Type.String({ minLength: 1, description: 'File holding `JWT_VERIFY_KEYS`, read at start' })),
  JWT_EXPIRES_IN: Type.String({ ...Duration, default: '60m', description: 'Token lifetime: a whole number and `s`, `m`, `h` or `d`' }),
  JWT_ISSUER: Type.Optional(Type.String({ minLength: 1, description: 'When set, signed into tokens (`iss`) and required on verification' })),
  JWT_AUDIENCE: Type.Optional(Type.String({ minLength: 1, description: 'When set, signed into tokens (`aud`) and required on verification' })),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port the server listens on' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address the server listens on' }),
  LOG_LEVEL: OneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info', 'pino level: `fatal` … `trace`, or `silent`'),
  NODE_ENV: Type.String({ default: 'development', description: 'With `production`, the server refuses to start without `USERS_FILE`' }),
  USERS_FILE: Type.Optional(Type.String({ minLength: 1, description: 'JSON file of users (see Users); unset means the demo users and a warning' })),
  CATS_AUTH: OneOf(['public', 'required'], 'public', '`required` puts the token guard on every `/cats` route'),
  CATS_IF_MATCH: OneOf(['optional', 'required'], 'optional', '`required`: `PUT`, `PATCH` and `DELETE` on `/cats/{id}` need `If-Match` with the cat\'s ETag (428 without)'),
  DATABASE_URL: Type.Optional(Type.String({
    pattern: '^(postgres|postgresql|pglite)://.+',
    description: 'Unset: cats in memory; `postgres://…` a PostgreSQL server; `pglite://<directory>` or `pglite://memory` embedded PostgreSQL'
  })),
  DATABASE_SCHEMA: Type.Optional(Type.String({
    pattern: '^(?!pg_)[a-z_][a-z0-9_$]{0,62}$',
    description: 'PostgreSQL schema of every table, sequence and function of the service, created when missing (lowercase letters, digits, `_` and `$`, at most 63, not starting with `pg_`); unset: the connection\'s current schema, where earlier releases put them. Give the service a schema of its own when the database holds other applications\' tables'
  })),
  DATABASE_POOL_SIZE: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 10,
    description: 'Most connections each instance opens to a PostgreSQL server: single-cat reads, updates and plain creates share a few batched statements, while deletes, list pages, creates with an Idempotency-Key and sessions take one each (keep instances × this under the server\'s `max_connections`)'
  }),
  DATABASE_PREPARED_STATEMENTS: Type.Boolean({
    default: true,
    description: 'PostgreSQL parses and plans the frequent statements once per connection; `false` behind a pooler that shares server sessions between clients (PgBouncer in transaction mode before 1.21)'
  }),
  DATABASE_POOLER: OneOf(['none', 'session', 'transaction'], 'none', 'The pool mode of a pooler between the service and PostgreSQL (PgBouncer; `statement` mode does not work): with one, the statement timeout is set per transaction and statement, not as a start-up parameter (which PgBouncer refuses)'),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://.+', description: '`redis://…`: the failed-login counters and the logout denylist are shared by every instance (Redis 7 or later)' })),
  REDIS_CLUSTER_NODES: Type.Optional(Type.String({
    pattern: `^${SEED}( *, *${SEED})*$`,
    description: 'Comma-separated `host:port` seeds of a Redis Cluster (Redis 7 or later), used for every Redis role in place of `REDIS_URL` (not both): each user\'s sessions live on one node (see Scaling out in docs/operations.md)'
  })),
  REDIS_WAIT_REPLICAS: Type.Integer({
    minimum: 0,
    maximum: 1000,
    default: 0,
    description: 'Replicas that each denial, and each end of a session kept in Redis by a logout or `DELETE /auth/sessions/{id}`, must reach before it is answered (`WAIT` on a connection of its own to the master of its key, within 900 ms; fewer: 503, and the retry writes and waits again). Set it to the number of replicas that can be promoted, per master in a cluster (see What an acknowledged logout survives in docs/operations.md); `0`: no wait'
  }),
  REDIS_KEY_PREFIX: Type.String({ default: 'cats-api:', description: 'Prefix of every Redis key the service writes, so several deployments can share one Redis' }),
  CATS_MAX: Type.Integer({ minimum: 1, default: 50_000, description: 'Most cats stored; past it `POST /cats` gets 507' }),
  WRITE_HEAP_RATIO: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    default: 0.8,
    description: 'Creates and updates get 507 while the heap is above this share of its limit'
  }),
  LIST_STREAMS_MAX: Type.Integer({
    minimum: 5,
    default: 8,
    description: 'Most lists (`GET /cats`, whole or a page, larger than one 64 KiB chunk) streamed at once by each instance; past it 503 with Retry-After'
  }),
  LIST_WRITE_TIMEOUT_MS: Type.Integer({
    minimum: 1,
    default: 30_000,
    description: 'Longest a streamed list (whole or a page) waits for its reader to take the next chunk, in milliseconds; past it the connection is closed'
  }),
  BODY_LIMIT: Type.Integer({
    minimum: 256,
    maximum: 1_048_576,
    default: 8192,
    description: 'Largest request body in bytes (413), and largest stored cat after a merge'
  }),
  IDEMPOTENCY_KEYS_MAX: Type.Integer({
    minimum: 1,
    default: 50_000,
    description: 'Most `Idempotency-Key`s kept in all (per instance in memory, per database otherwise); past it the oldest key of any client goes'
  }),
  IDEMPOTENCY_KEYS_MAX_BYTES: Type.Integer({
    minimum: 1024,
    default: 33_554_432,
    description: 'Most bytes of `Idempotency-Key`s kept in all (a key counts its texts, the answer included, plus 512); past it the oldest key of any client goes'
  }),
  IDEMPOTENCY_CLIENT_KEYS_MAX: Type.Integer({
    minimum: 1,
    default: 500,
    description: 'Most `Idempotency-Key`s kept per client (the user with `CATS_AUTH=required`, else the client address); past it that client\'s own oldest key goes'
  }),
  IDEMPOTENCY_CLIENT_KEYS_MAX_BYTES: Type.Integer({
    minimum: 1024,
    default: 524_288,
    description: 'Most bytes of `Idempotency-Key`s kept per client; past it that client\'s own oldest key goes (a key larger than this is not kept)'
  }),
  DOCS_ENABLED: Type.Boolean({ default: true, description: '`false` turns off `/docs` and `/docs/json`' }),
  METRICS_ENABLED: Type.Boolean({
    default: false,
    description: '`true`: the server serves Prometheus metrics at `GET /metrics` (an embedding app passes its own registry instead)'
  }),
  TRUST_PROXY: Type.String({
    pattern: TRUST_PROXY_FORMS.source,
    default: 'false',
    description: 'Whose `X-Forwarded-For` gives the client address: `false` (nobody\'s), a hop count (the number of proxies in front), or comma-separated proxy addresses/CIDRs; `true` is refused'
  }),
  CORS_ORIGINS: Type.String({ default: '', description: 'Comma-separated origins allowed by CORS; empty turns CORS off' }),
  LOGIN_MAX_FAILURES: Type.Integer({
    minimum: 1,
    default: 10,
    description: 'Failed logins for one username from one client address, within `LOGIN_FAILURE_WINDOW`, that lock this pair (429)'
  }),
  LOGIN_FAILURE_WINDOW: Type.String({ ...Duration, default: '15m', description: 'The window in which a username and client address pair\'s failures count' }),
  LOGIN_LOCK_DURATION: Type.String({ ...Duration, default: '1m', description: 'The first lock of a pair; each further failure while locked doubles it' }),
  LOGIN_LOCK_MAX: Type.String({ ...Duration, default: '1h', description: 'The longest lock of a pair' }),
  LOGIN_CLIENT_MAX_FAILURES: Type.Integer({
    minimum: 1,
    default: 100,
    description: 'Failed logins from one client address across all usernames, within `LOGIN_CLIENT_FAILURE_WINDOW`, past which the address is refused for every username'
  }),
  LOGIN_CLIENT_FAILURE_WINDOW: Type.String({ ...Duration, default: '15m', description: 'The window in which a client address\'s failures count' }),
  LOGIN_SLOT_QUEUE_MAX: Type.Integer({
    minimum: 0,
    default: 100,
    description: 'Logins in line for a login slot in each instance (a login waits, up to 2 s, while logins of its username and address in progress hold every slot); past it 503 with Retry-After'
  }),
  REFRESH_TOKENS: Type.Boolean({ default: false, description: '`true`: login also returns a `refresh_token`, exchanged at `POST /auth/refresh` (see Sessions)' }),
  REFRESH_TOKEN_TTL: Type.String({
    ...Duration,
    default: '30d',
    description: 'Lifetime of a refresh token: a whole number and `s`, `m`, `h` or `d`; with `REFRESH_TOKENS=true`, at least `JWT_EXPIRES_IN`'
  }),
  REFRESH_REUSE_WINDOW: Type.String({
    pattern: '^(0|[1-9]s|[1-5][0-9]s|60s|1m)$',
    default: '10s',
    description: 'How long the refresh token replaced by the latest refresh still gets the session\'s current tokens (for two tabs refreshing at once): `0` (off) up to `60s`'
  }),
  REFRESH_RATE_LIMIT: Type.Integer({ minimum: 1, default: 30, description: 'Most refreshes one session may make per minute; past it `POST /auth/refresh` gets 429' }),
  SESSIONS_PER_USER_MAX: Type.Integer({ minimum: 1, default: 100, description: 'Most live sessions per user; a login beyond it ends that user\'s oldest session' }),
  HASH_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'Password hashes computed at once, each on its own worker thread (at below-normal CPU priority on Linux)' }),
  HASH_QUEUE_MAX: Type.Integer({ minimum: 0, default: 100, description: 'Logins waiting for a hash; beyond that 503' }),
  HASH_QUEUE_WAIT_MS: Type.Integer({ minimum: 1, default: 3000, description: 'Longest a login waits for a hash, in milliseconds; beyond that 503 with Retry-After' }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 30_000, description: 'Idle socket timeout, in milliseconds' }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 10_000, description: 'Time allowed to receive all request headers, in milliseconds' }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000, description: 'Time allowed to receive a whole request, in milliseconds' }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 5_000, description: 'Keep-alive idle time, in milliseconds' }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({
    minimum: 0,
    default: 10_000,
    description: 'After SIGTERM/SIGINT, the longest wait in milliseconds for open connections to finish before they are closed and the process exits'
  }),
  MAX_HEADER_BYTES: Type.Integer({ minimum: 1024, default: 16_384, description: 'Larger request headers get 431' }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000, description: 'Load shedding (503) past this event-loop delay; `0` turns the check off' }),
  MAX_HEAP_USED_BYTES: Type.Integer({ minimum: 0, default: 0, description: 'Load shedding (503) past this heap use; `0` turns the check off' })
}

/** HS256, the default algorithm, needs its secret; the other algorithms' keys are read and checked at start (src/auth/tokens/token-keys.ts). */
export const HS256_NEEDS_SECRET = { if: { properties: { JWT_ALGORITHM: { const: 'HS256' } } }, then: { required: ['JWT_SECRET'] } }

export const ConfigSchema = Type.Object(ConfigProperties, HS256_NEEDS_SECRET)

/** The settings as the schema has them (durations as written, e.g. `60m`). */
export type Settings = Static<typeof ConfigSchema>

/** The duration settings decoded once, when the settings are loaded; each name says its unit. */
export interface Durations {
  /** JWT_EXPIRES_IN */
  accessTokenSeconds: number
  /** REFRESH_TOKEN_TTL */
  refreshTokenSeconds: number
  /** REFRESH_REUSE_WINDOW; 0 when off */
  refreshReuseWindowMs: number
  /** LOGIN_FAILURE_WINDOW */
  loginFailureWindowMs: number
  /** LOGIN_LOCK_DURATION */
  loginLockMs: number
  /** LOGIN_LOCK_MAX */
  loginLockMaxMs: number
  /** LOGIN_CLIENT_FAILURE_WINDOW */
  loginClientFailureWindowMs: number
}

/** The loaded settings: the schema's, and their durations as numbers. */
export type Config = Settings & { readonly durations: Durations }

/** Settings as a caller may give them: JWT_SECRET (or, with another algorithm, a private key) is required, the rest have defaults. */
export type ConfigInput = Partial<Record<keyof Settings, string | number | boolean | undefined>>

/** Where settings come from besides the given source. */
export interface ConfigSources {
  /**
   * A `.env` file to read when it exists (the standalone server and tools only, never an embedding app):
   * the source's values win over the file's.
   */
  envFile?: string
}

/** env-schema reads the file when it exists; the values given in `data` win over it. */
const dotenvOption = (envFile: string | undefined): false | { path: string } => envFile === undefined ? false : { path: envFile }

/**
 * Validates settings and fills in defaults. Throws one Error naming every bad
 * variable, e.g. `env/JWT_SECRET must NOT have fewer than 32 characters`.
 */
export function loadConfig (source: Record<string, unknown>, { envFile }: ConfigSources = {}): Config {
  let settings: Settings
  try {
    settings = envSchema<Settings>({ schema: ConfigSchema, data: { ...source }, env: false, dotenv: dotenvOption(envFile) })
  } catch (error) {
    throw inWords(error)
  }
  const config = { ...settings, durations: decodeDurations(settings) }
  checkLifetimes(config)
  checkRedis(config)
  return config
}

function decodeDurations (settings: Settings): Durations {
  const ms = (duration: string): number => durationToSeconds(duration) * 1000
  return {
    accessTokenSeconds: durationToSeconds(settings.JWT_EXPIRES_IN),
    refreshTokenSeconds: durationToSeconds(settings.REFRESH_TOKEN_TTL),
    refreshReuseWindowMs: settings.REFRESH_REUSE_WINDOW === '0' ? 0 : ms(settings.REFRESH_REUSE_WINDOW),
    loginFailureWindowMs: ms(settings.LOGIN_FAILURE_WINDOW),
    loginLockMs: ms(settings.LOGIN_LOCK_DURATION),
    loginLockMaxMs: ms(settings.LOGIN_LOCK_MAX),
    loginClientFailureWindowMs: ms(settings.LOGIN_CLIENT_FAILURE_WINDOW)
  }
}

/**
 * A session is listed, and can be ended by its owner, as long as its record lives, which is as long as its refresh
 * token: a refresh token shorter-lived than the access token issued with it would let a session drop out of the
 * list while that access token still works. Such a setting is refused.
 */
function checkLifetimes ({ REFRESH_TOKENS, REFRESH_TOKEN_TTL, JWT_EXPIRES_IN, durations }: Config): void {
  if (!REFRESH_TOKENS || durations.refreshTokenSeconds >= durations.accessTokenSeconds) return
  throw new Error(`env/REFRESH_TOKEN_TTL (${REFRESH_TOKEN_TTL}) must not be shorter than env/JWT_EXPIRES_IN (${JWT_EXPIRES_IN}) ` +
    'when REFRESH_TOKENS is on: a session must stay listed, and endable, while its access tokens work')
}

/**
 * One Redis or one Redis Cluster: with both settings, which one holds the denylist would be a guess. Replicas to wait
 * for need a Redis: without one, the setting would promise what nothing does.
 */
function checkRedis ({ REDIS_URL, REDIS_CLUSTER_NODES, REDIS_WAIT_REPLICAS }: Config): void {
  if (REDIS_URL !== undefined && REDIS_CLUSTER_NODES !== undefined) {
    throw new Error('env/REDIS_URL and env/REDIS_CLUSTER_NODES must not both be set: name one Redis server or one Redis Cluster')
  }
  if (REDIS_WAIT_REPLICAS > 0 && REDIS_URL === undefined && REDIS_CLUSTER_NODES === undefined) {
    throw new Error('env/REDIS_WAIT_REPLICAS needs env/REDIS_URL or env/REDIS_CLUSTER_NODES: it counts the replicas of their masters')
  }
}

/**
 * env-schema's error, every failure as env-schema words it (`env/PORT must be integer`) in one message, with a
 * refused TRUST_PROXY told in words (its pattern would tell nobody what to set) and without Ajv's extra
 * "must match \"then\" schema" beside a missing JWT_SECRET.
 */
function inWords (error: unknown): unknown {
  const issues: ErrorObject[] = error instanceof Error && 'errors' in error && Array.isArray(error.errors) ? error.errors : []
  const kept = issues.filter((issue) => issue.keyword !== 'if')
  if (kept.length === issues.length && !kept.some((issue) => issue.instancePath === '/TRUST_PROXY')) return error
  const words = kept.map((issue) => issue.instancePath === '/TRUST_PROXY' ? TRUST_PROXY_RULE : `env${issue.instancePath} ${String(issue.message)}`)
  return Object.assign(new Error(words.join(', ')), { errors: kept })
}

const DatabaseSchema = Type.Object({ DATABASE_URL: ConfigProperties.DATABASE_URL, DATABASE_SCHEMA: ConfigProperties.DATABASE_SCHEMA, DATABASE_POOLER: ConfigProperties.DATABASE_POOLER })

/** Only the database settings, for tools that need nothing else (npm run migrate). */
export function loadDatabaseConfig (source: Record<string, unknown>, { envFile }: ConfigSources = {}): Static<typeof DatabaseSchema> {
  return envSchema<Static<typeof DatabaseSchema>>({ schema: DatabaseSchema, data: { ...source }, env: false, dotenv: dotenvOption(envFile) })
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 }

/** Converts a duration such as `60m` into seconds. */
export function durationToSeconds (duration: string): number {
  const match = /^([1-9][0-9]{0,8})([smhd])$/.exec(duration)
  if (match === null) {
    throw new Error(`Invalid duration "${duration}": expected a whole number followed by s, m, h or d`)
  }
  return Number(match[1]) * UNIT_SECONDS[match[2]]
}

/**
 * Turns TRUST_PROXY into Fastify's `trustProxy` option: `false`, a hop count, or addresses/CIDRs. Never `true`,
 * which would let any client name its own address in X-Forwarded-For and so escape every limit per address.
 */
export function parseTrustProxy (value: string): false | string | ((address: string, hop: number) => boolean) {
  if (!TRUST_PROXY_FORMS.test(value)) throw new Error(TRUST_PROXY_RULE)
  if (value === 'false') return false
  if (/^[0-9]+$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  return value
}
