import { envSchema } from 'env-schema'
import { Type, type Static } from '@sinclair/typebox'

const Duration = Type.String({
  pattern: '^[1-9][0-9]{0,8}(s|m|h|d)$',
  description: 'A whole number followed by s, m, h or d, e.g. 60m or 7d'
})

/** One of the given words; the pattern makes a validation error name them all. */
const OneOf = (words: string[], fallback: string) =>
  Type.String({ pattern: `^(${words.join('|')})$`, default: fallback })

/**
 * Every setting of the service. The server reads them from the environment;
 * a host app passes the same keys as plugin options. Both go through this schema.
 */
export const ConfigSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development' }),
  JWT_SECRET: Type.String({ minLength: 32, description: 'HS256 signing secret, at least 32 characters' }),
  JWT_EXPIRES_IN: Type.String({ ...Duration, default: '60m' }),
  JWT_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  JWT_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  LOG_LEVEL: OneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  USERS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  CATS_AUTH: OneOf(['public', 'required'], 'public'),
  DATABASE_URL: Type.Optional(Type.String({
    pattern: '^(postgres|postgresql|pglite)://.+',
    description: 'Unset: cats in memory; postgres://… a PostgreSQL server; pglite://<dir> or pglite://memory embedded PostgreSQL'
  })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://.+', description: 'Shares the login rate limit between instances' })),
  CATS_MAX: Type.Integer({ minimum: 1, default: 50_000, description: 'Most cats stored; past it POST /cats gets 507' }),
  WRITE_HEAP_RATIO: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    default: 0.8,
    description: 'Creates and updates get 507 while the heap is above this share of its limit'
  }),
  BODY_LIMIT: Type.Integer({ minimum: 256, maximum: 1_048_576, default: 8192, description: 'Largest request body, and largest stored cat, in bytes' }),
  DOCS_ENABLED: Type.Boolean({ default: true }),
  TRUST_PROXY: Type.String({ default: 'false', description: 'false, true, a hop count, or comma-separated addresses/CIDRs' }),
  CORS_ORIGINS: Type.String({ default: '', description: 'Comma-separated allowed origins; empty turns CORS off' }),
  LOGIN_RATE_LIMIT_MAX: Type.Integer({ minimum: 1, default: 10 }),
  LOGIN_RATE_LIMIT_WINDOW: Type.String({ ...Duration, default: '1m' }),
  HASH_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
  HASH_QUEUE_MAX: Type.Integer({ minimum: 0, default: 100 }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 30_000, description: 'Idle socket timeout' }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 10_000, description: 'Time allowed to receive all request headers' }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000, description: 'Time allowed to receive a whole request' }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 5_000 }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({
    minimum: 0,
    default: 10_000,
    description: 'After SIGTERM/SIGINT, the longest wait for open connections to finish before they are closed and the process exits'
  }),
  MAX_HEADER_BYTES: Type.Integer({ minimum: 1024, default: 16_384, description: 'Larger request headers get 431' }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000, description: '0 turns the check off' }),
  MAX_HEAP_USED_BYTES: Type.Integer({ minimum: 0, default: 0, description: '0 turns the check off' })
})

export type Config = Static<typeof ConfigSchema>

/** Settings as a caller may give them: JWT_SECRET is required, the rest have defaults. */
export type ConfigInput = Partial<Record<keyof Config, string | number | boolean | undefined>> & { JWT_SECRET: string }

/**
 * Validates settings and fills in defaults. Throws one Error naming every bad
 * variable, e.g. `env/JWT_SECRET must NOT have fewer than 32 characters`.
 */
export function loadConfig (source: Record<string, unknown>): Config {
  return envSchema<Config>({ schema: ConfigSchema, data: { ...source }, env: false })
}

const DatabaseSchema = Type.Pick(ConfigSchema, ['DATABASE_URL'])

/** Only the database setting, for tools that need nothing else (npm run migrate). */
export function loadDatabaseConfig (source: Record<string, unknown>): Static<typeof DatabaseSchema> {
  return envSchema<Static<typeof DatabaseSchema>>({ schema: DatabaseSchema, data: { ...source }, env: false })
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

/** Turns TRUST_PROXY into Fastify's `trustProxy` option: a boolean, a hop count, or addresses/CIDRs. */
export function parseTrustProxy (value: string): boolean | string | ((address: string, hop: number) => boolean) {
  if (value === 'true' || value === 'false') return value === 'true'
  if (/^[0-9]+$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  return value
}
