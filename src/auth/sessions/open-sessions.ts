import type { Config } from '../../config.js'
import { MemoryDenylist, type Denylist } from './denylist.js'
import { RedisDenylist } from './redis-denylist.js'
import { RedisSessionStore } from './redis-session-store.js'
import { refreshTokenKey } from './refresh-token.js'
import { MemorySessionStore } from './memory-session-store.js'
import { SKEW_MARGIN_MS, type SessionStore } from './session-store.js'
import { Sessions, type SessionsOptions } from './sessions.js'
import { SqlDenylist } from './sql-denylist.js'
import { SqlSessionStore } from './sql-session-store.js'
import type { Database } from '../../db/database.js'
import type { RedisConnection } from '../../redis-connection.js'
import type { Accounts } from '../login/users.js'

/**
 * The sessions of the settings, each store where every instance reads it whenever a shared store is configured:
 * session records in the database when there is one, else in Redis, else in memory; the denylist in Redis when
 * there is one, else in the database, else in memory. `close` closes the stores.
 */
export function openSessions (config: Config, { database, redis, users, sign, refreshSecret, events }: {
  database: Database | undefined
  redis: RedisConnection | undefined
  users: Accounts
  sign: SessionsOptions['sign']
  /** The secret refresh tokens are proven with (TokenKeys.refreshSecret). */
  refreshSecret: string
  events: SessionsOptions['events']
}): { sessions: Sessions, close: () => Promise<void> } {
  const { REDIS_KEY_PREFIX, REFRESH_TOKENS, REFRESH_RATE_LIMIT, SESSIONS_PER_USER_MAX, durations } = config
  const denylist: Denylist = redis !== undefined
    ? new RedisDenylist(redis.client, REDIS_KEY_PREFIX, redis.status, redis.cluster, redis.acknowledged)
    : database !== undefined ? new SqlDenylist(database.client, database.status, database.schema) : new MemoryDenylist()
  // An ended session is kept while its access tokens could live, so that its refresh token denies them again.
  const endedKeepMs = durations.accessTokenSeconds * 1000 + SKEW_MARGIN_MS
  const store: SessionStore = database !== undefined
    ? new SqlSessionStore(database.client, database.status, endedKeepMs, database.schema)
    : redis !== undefined
      ? new RedisSessionStore(redis.client, REDIS_KEY_PREFIX, redis.status, endedKeepMs, redis.cluster, redis.acknowledged)
      : new MemorySessionStore(undefined, endedKeepMs)
  const sessions = new Sessions({
    sign,
    accessLifetimeSeconds: durations.accessTokenSeconds,
    refreshEnabled: REFRESH_TOKENS,
    refreshLifetimeSeconds: durations.refreshTokenSeconds,
    refreshKey: refreshTokenKey(refreshSecret),
    refreshLimit: { max: REFRESH_RATE_LIMIT, windowMs: 60_000, reuseWindowMs: durations.refreshReuseWindowMs },
    maxPerUser: SESSIONS_PER_USER_MAX,
    store,
    denylist,
    users,
    events
  })
  return {
    sessions,
    close: async () => {
      await denylist.close()
      await store.close()
    }
  }
}
