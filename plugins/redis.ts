import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { DependencyStatus } from '../src/dependency-status.js'

/** The service's one Redis client and what is known of its health. */
export interface RedisConnection {
  client: Redis
  status: DependencyStatus
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Redis when REDIS_URL is set (shared login counters, the logout denylist); undefined otherwise. */
    redis: RedisConnection | undefined
  }
}

/** How long one Redis command may take before the login answers 503. */
const REDIS_COMMAND_TIMEOUT_MS = 1000
const REDIS_CONNECT_TIMEOUT_MS = 2000
// The longest pause between reconnection attempts (ioredis's default grows to 5 s).
const REDIS_RETRY_MAX_MS = 250

/**
 * Waits for the first connection, so that logins do not answer 503 just after a start, but
 * never longer than the connect timeout, and not at all once a first attempt has failed:
 * an outage at start-up delays nothing, readiness reports it.
 */
async function firstConnection (redis: Redis): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      redis.off('ready', done).off('error', done)
      resolve()
    }
    const timer = setTimeout(done, REDIS_CONNECT_TIMEOUT_MS)
    redis.once('ready', done).once('error', done)
  })
}

/**
 * The Redis client of the service, when REDIS_URL is set. Redis is then a
 * dependency named `redis`: readiness probes it, and an outage is logged once.
 */
export default fp(async (fastify) => {
  const { REDIS_URL } = fastify.config
  if (REDIS_URL === undefined) {
    fastify.decorate('redis', undefined)
    return
  }
  const { Redis } = await import('ioredis')
  // Fail fast instead of waiting: no queueing while Redis is away, and a Redis that accepts
  // connections but never answers times out; the login then answers 503 within seconds.
  // A connection that went silent is replaced, not kept: ioredis pairs replies with commands in
  // order and keeps timed-out ones in line, so once a reply is lost every later reply would go to
  // an older command and the client would never recover. Nothing is sent again on the new
  // connection (its caller already had its 503; a login slot taken late would stay held), and
  // reconnection retries stay frequent, so logins are served again within 2 s of Redis answering.
  const redis = new Redis(REDIS_URL, {
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    socketTimeout: REDIS_COMMAND_TIMEOUT_MS,
    retryStrategy: (times) => Math.min(times * 50, REDIS_RETRY_MAX_MS)
  })
  const status = new DependencyStatus('redis', fastify.log, () => redis.ping())
  fastify.dependencies.set(status.name, status)
  // Reconnection attempts fail again and again during an outage: the status logs the first failure only.
  redis.on('error', (error) => status.failed(error))
  redis.on('ready', () => status.succeeded())
  fastify.addHook('onClose', async () => {
    redis.disconnect()
  })
  await firstConnection(redis)
  fastify.decorate('redis', { client: redis, status })
}, { name: 'redis', dependencies: ['config', 'dependencies'] })
