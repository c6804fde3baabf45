import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { Redis } from 'ioredis'

/** A key prefix no other test or run uses; its keys are deleted when the test ends. */
export function freshKeyPrefix (t: Test, redisUrl: string): string {
  const prefix = `cats-test-${randomBytes(6).toString('hex')}:`
  t.teardown(async () => {
    const redis = new Redis(redisUrl)
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  })
  return prefix
}

/** A client of the test's own and a fresh key prefix, both cleaned up when the test ends. */
export function testRedis (t: Test, redisUrl: string): { redis: Redis, prefix: string } {
  const redis = new Redis(redisUrl)
  t.teardown(() => { redis.disconnect() })
  return { redis, prefix: freshKeyPrefix(t, redisUrl) }
}
