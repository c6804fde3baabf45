import { once } from 'node:events'
import fp from 'fastify-plugin'
import { durationToSeconds } from '../src/config.js'
import { MemoryRefreshTokenStore, type RefreshTokenStore } from '../src/auth/refresh-token-store.js'
import { MemoryRevocationStore, type RevocationStore } from '../src/auth/revocation-store.js'
import { RedisRevocationStore } from '../src/auth/redis-revocation-store.js'
import { Sessions } from '../src/auth/sessions.js'
import { SqlRefreshTokenStore, SqlRevocationStore } from '../src/auth/sql-session-stores.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Logout, refresh tokens and the denylist the token guard consults. */
    sessions: Sessions
  }
}

/** How long one Redis command may take before the request answers 503. */
const REDIS_COMMAND_TIMEOUT_MS = 1000
/** How long start-up waits for the first Redis connection. */
const REDIS_CONNECT_WAIT_MS = 2000

/** The denylist in Redis: a connection of its own, failing fast like the login limiter's. */
async function redisRevocations (redisUrl: string): Promise<RevocationStore> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS
  })
  // Reconnection attempts fail again and again during an outage; requests meanwhile answer 503.
  // The outage is logged by the login limiter's `redis` dependency, on the same server.
  redis.on('error', () => {})
  // Commands are not queued while disconnected: wait (briefly) for the first connection, so that the first
  // guarded requests do not fail for want of it. A Redis that is down ends the wait at once with an error.
  await once(redis, 'ready', { signal: AbortSignal.timeout(REDIS_CONNECT_WAIT_MS) }).catch(() => {})
  return new RedisRevocationStore(redis)
}

/**
 * The session stores: the denylist in Redis when REDIS_URL is set, else in the
 * database when DATABASE_URL is set, else in memory; refresh tokens in the
 * database when DATABASE_URL is set, else in memory.
 */
export default fp(async (fastify) => {
  const { REDIS_URL, JWT_EXPIRES_IN, REFRESH_TOKENS, REFRESH_TOKEN_TTL } = fastify.config
  const { database } = fastify
  const revocations: RevocationStore = REDIS_URL !== undefined
    ? await redisRevocations(REDIS_URL)
    : database !== undefined ? new SqlRevocationStore(database.client, database.status) : new MemoryRevocationStore()
  const refreshTokens: RefreshTokenStore = database !== undefined
    ? new SqlRefreshTokenStore(database.client, database.status)
    : new MemoryRefreshTokenStore()
  fastify.decorate('sessions', new Sessions({
    sign: (claims) => fastify.jwt.sign(claims),
    accessLifetimeSeconds: durationToSeconds(JWT_EXPIRES_IN),
    refreshEnabled: REFRESH_TOKENS,
    refreshLifetimeSeconds: durationToSeconds(REFRESH_TOKEN_TTL),
    revocations,
    refreshTokens,
    users: fastify.users
  }))
  fastify.addHook('onClose', async () => {
    await revocations.close()
    await refreshTokens.close()
  })
}, { name: 'sessions', dependencies: ['config', 'jwt', 'users', 'cats-store', 'dependencies'] })
