import type { Redis } from 'ioredis'
import { SessionStoreUnavailableError } from './session-errors.js'
import type { RevocationStore } from './revocation-store.js'

const PREFIX = 'cats-api-revoked:'

/**
 * The denylist in Redis, shared by every instance: one key per denied id,
 * which Redis itself removes when it expires (PX). A lookup is one
 * EXISTS over both ids, one round trip.
 */
export class RedisRevocationStore implements RevocationStore {
  readonly #redis: Redis

  constructor (redis: Redis) {
    this.#redis = redis
  }

  async isRevoked (jti: string, sid: string): Promise<boolean> {
    try {
      return await this.#redis.exists(PREFIX + jti, PREFIX + sid) > 0
    } catch (error) {
      throw new SessionStoreUnavailableError(error)
    }
  }

  async revoke (id: string, untilMs: number): Promise<void> {
    const ttlMs = untilMs - Date.now()
    if (ttlMs <= 0) return
    try {
      // One transaction: creates the entry, or lengthens one that exists (never shortens it; GT needs Redis 7).
      await this.#redis.multi().set(PREFIX + id, '1', 'PX', ttlMs, 'NX').pexpire(PREFIX + id, ttlMs, 'GT').exec()
    } catch (error) {
      throw new SessionStoreUnavailableError(error)
    }
  }

  async close (): Promise<void> {
    this.#redis.disconnect()
  }
}
