import type { AcknowledgedWrites, RedisClient } from '../../redis-connection.js'
import type { DependencyStatus } from '../../dependency-status.js'
import type { Denylist } from './denylist.js'
import { sessionStoreCall } from './session-store.js'

/**
 * The denylist in Redis, shared by every instance: one key per denied id,
 * which Redis itself removes when it expires (PX). A lookup is one
 * EXISTS over both ids, one round trip. In a Redis Cluster the two keys are
 * in two slots (each entry is one id's, and nothing ties a token id to its
 * session's slot), so a lookup is two EXISTS sent at once: still one round
 * trip's wait. It uses the service's Redis client, whose status hears of
 * every command's outcome; with REDIS_WAIT_REPLICAS, a denial is written
 * through the acknowledged writes instead, and waits for the replicas.
 */
export class RedisDenylist implements Denylist {
  readonly #redis: RedisClient
  readonly #prefix: string
  readonly #status: DependencyStatus
  readonly #cluster: boolean
  readonly #acknowledged: AcknowledgedWrites | undefined

  /** `cluster`: the client is a Redis Cluster's; `acknowledged`: the writes that wait for REDIS_WAIT_REPLICAS. */
  constructor (redis: RedisClient, keyPrefix: string, status: DependencyStatus, cluster = false, acknowledged?: AcknowledgedWrites) {
    this.#redis = redis
    this.#prefix = `${keyPrefix}revoked:`
    this.#status = status
    this.#cluster = cluster
    this.#acknowledged = acknowledged
  }

  async isRevoked (jti: string, sid: string): Promise<boolean> {
    if (!this.#cluster) return await sessionStoreCall(this.#status, () => this.#redis.exists(this.#prefix + jti, this.#prefix + sid)) > 0
    const [byJti, bySid] = await sessionStoreCall(this.#status, () => Promise.all([this.#redis.exists(this.#prefix + jti), this.#redis.exists(this.#prefix + sid)]))
    return byJti + bySid > 0
  }

  async revoke (id: string, untilMs: number): Promise<void> {
    const ttlMs = untilMs - Date.now()
    if (ttlMs <= 0) return
    const key = this.#prefix + id
    // One transaction: creates the entry, or lengthens one that exists (never shortens it; GT needs Redis 7). Written
    // again by a retry, so a denial whose replicas fell short is waited for again.
    const write = async (client: RedisClient) => await client.multi().set(key, '1', 'PX', ttlMs, 'NX').pexpire(key, ttlMs, 'GT').exec()
    const acknowledged = this.#acknowledged
    await sessionStoreCall(this.#status, () => acknowledged === undefined ? write(this.#redis) : acknowledged.write(key, write))
  }

  // The client belongs to the service's redis plugin, which closes it.
  async close (): Promise<void> {}
}
