import type { Redis } from 'ioredis'
import type { DependencyStatus } from '../dependency-status.js'
import type { Denylist } from './denylist.js'
import { sessionStoreCall } from './session-store.js'

/**
 * The denylist in Redis, shared by every instance: one key per denied id,
 * which Redis itself removes when it expires (PX). A lookup is one
 * EXISTS over both ids, one round trip. It uses the service's Redis client,
 * whose status hears of every command's outcome.
 */
export class RedisDenylist implements Denylist {
  readonly #redis: Redis
  readonly #prefix: string
  readonly #status: DependencyStatus

  constructor (redis: Redis, keyPrefix: string, status: DependencyStatus) {
    this.#redis = redis
    this.#prefix = `${keyPrefix}revoked:`
    this.#status = status
  }

  async isRevoked (jti: string, sid: string): Promise<boolean> {
    return await sessionStoreCall(this.#status, () => this.#redis.exists(this.#prefix + jti, this.#prefix + sid)) > 0
  }

  async revoke (id: string, untilMs: number): Promise<void> {
    const ttlMs = untilMs - Date.now()
    if (ttlMs <= 0) return
    const key = this.#prefix + id
    // One transaction: creates the entry, or lengthens one that exists (never shortens it; GT needs Redis 7).
    await sessionStoreCall(this.#status, () => this.#redis.multi().set(key, '1', 'PX', ttlMs, 'NX').pexpire(key, ttlMs, 'GT').exec())
  }

  // The client belongs to the service's redis plugin, which closes it.
  async close (): Promise<void> {}
}
