import fp from 'fastify-plugin'
import { durationToSeconds } from '../src/config.js'
import { MemoryRevocationStore, type RevocationStore } from '../src/auth/revocation-store.js'
import { RedisRevocationStore } from '../src/auth/redis-revocation-store.js'
import { RedisSessionStore } from '../src/auth/redis-session-store.js'
import { refreshTokenKey } from '../src/auth/refresh-token.js'
import { MemorySessionStore, SKEW_MARGIN_MS, type SessionStore } from '../src/auth/session-store.js'
import { Sessions } from '../src/auth/sessions.js'
import { SqlRevocationStore, SqlSessionStore } from '../src/auth/sql-session-stores.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Logout, refresh tokens and the denylist the token guard consults. */
    sessions: Sessions
  }
}

/**
 * The session stores, each where every instance reads it whenever a shared store
 * is configured: session records in the database when DATABASE_URL is set, else
 * in Redis when REDIS_URL is set, else in memory; the denylist in Redis when
 * REDIS_URL is set, else in the database, else in memory.
 */
export default fp(async (fastify) => {
  const { REDIS_KEY_PREFIX, JWT_SECRET, JWT_EXPIRES_IN, REFRESH_TOKENS, REFRESH_TOKEN_TTL, REFRESH_RATE_LIMIT, SESSIONS_PER_USER_MAX } = fastify.config
  const { database, redis } = fastify
  const revocations: RevocationStore = redis !== undefined
    ? new RedisRevocationStore(redis.client, REDIS_KEY_PREFIX, redis.status)
    : database !== undefined ? new SqlRevocationStore(database.client, database.status) : new MemoryRevocationStore()
  // An ended session is kept while its access tokens could live, so that its refresh token denies them again.
  const endedKeepMs = durationToSeconds(JWT_EXPIRES_IN) * 1000 + SKEW_MARGIN_MS
  const store: SessionStore = database !== undefined
    ? new SqlSessionStore(database.client, database.status, endedKeepMs)
    : redis !== undefined
      ? new RedisSessionStore(redis.client, REDIS_KEY_PREFIX, redis.status, endedKeepMs)
      : new MemorySessionStore(undefined, endedKeepMs)
  fastify.decorate('sessions', new Sessions({
    sign: (claims) => fastify.jwt.sign(claims),
    accessLifetimeSeconds: durationToSeconds(JWT_EXPIRES_IN),
    refreshEnabled: REFRESH_TOKENS,
    refreshLifetimeSeconds: durationToSeconds(REFRESH_TOKEN_TTL),
    refreshKey: refreshTokenKey(JWT_SECRET),
    refreshLimit: { max: REFRESH_RATE_LIMIT, windowMs: 60_000 },
    maxPerUser: SESSIONS_PER_USER_MAX,
    store,
    revocations,
    users: fastify.users
  }))
  fastify.addHook('onClose', async () => {
    await revocations.close()
    await store.close()
  })
}, { name: 'sessions', dependencies: ['config', 'jwt', 'users', 'cats-store', 'dependencies', 'redis'] })
