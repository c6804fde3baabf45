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

/**
 * The session stores: the denylist in Redis when REDIS_URL is set, else in the
 * database when DATABASE_URL is set, else in memory; refresh tokens in the
 * database when DATABASE_URL is set, else in memory.
 */
export default fp(async (fastify) => {
  const { REDIS_KEY_PREFIX, JWT_EXPIRES_IN, REFRESH_TOKENS, REFRESH_TOKEN_TTL } = fastify.config
  const { database, redis } = fastify
  const revocations: RevocationStore = redis !== undefined
    ? new RedisRevocationStore(redis.client, REDIS_KEY_PREFIX, redis.status)
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
}, { name: 'sessions', dependencies: ['config', 'jwt', 'users', 'cats-store', 'dependencies', 'redis'] })
