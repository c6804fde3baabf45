import type { Cluster, Command, Redis } from 'ioredis'
import type { FastifyBaseLogger } from 'fastify'
import { DependencyStatus } from './dependency-status.js'
import { importOptionalPeer } from './optional-peer.js'
import { childSpan, endFailed, SpanKind } from './tracing/spans.js'

/** A client of one Redis server (REDIS_URL) or of a Redis Cluster (REDIS_CLUSTER_NODES): the same commands and scripts. */
export type RedisClient = Redis | Cluster

/** The service's one Redis client and what is known of its health. */
export interface RedisConnection {
  client: RedisClient
  status: DependencyStatus
  /**
   * True for a Redis Cluster: every script, transaction and multi-key command then keeps its keys in one slot
   * (a user's session keys under the user's hash tag, see src/auth/redis-session-store.ts).
   */
  cluster: boolean
}

/** How long one Redis command may take before the login answers 503. */
const REDIS_COMMAND_TIMEOUT_MS = 1000
const REDIS_CONNECT_TIMEOUT_MS = 2000
// The longest pause between reconnection attempts (ioredis's default grows to 5 s).
const REDIS_RETRY_MAX_MS = 250
// How often a cluster client asks which node serves which slots, besides at every MOVED.
const SLOTS_REFRESH_MS = 1000

/**
 * Waits for the first connection, so that logins do not answer 503 just after a start, but
 * never longer than the connect timeout, and not at all once a first attempt has failed:
 * an outage at start-up delays nothing, readiness reports it.
 */
async function firstConnection (redis: RedisClient): Promise<void> {
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
 * A span for each command the client sends during a traced request (see src/tracing/spans.ts): named for the
 * command, without its arguments (keys hold session ids, values token ids). Every command of the service, scripts,
 * transactions and probes included, goes through sendCommand. The span ends when the command's reply or failure
 * arrives; what sendCommand returns is passed on untouched (a transaction drops it, so it must not reject unseen).
 */
function traceCommands (redis: { sendCommand: (command: Command, ...rest: never[]) => unknown }): void {
  const send = redis.sendCommand.bind(redis)
  redis.sendCommand = (command, ...rest) => {
    const span = childSpan(() => {
      const operation = command.name.toUpperCase()
      return { name: operation, kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis', 'db.operation.name': operation } }
    })
    const sent = send(command, ...rest)
    if (span !== undefined) command.promise.then(() => span.end(), (error: unknown) => endFailed(span, error))
    return sent
  }
}

/**
 * The service's Redis client for REDIS_URL, connected (or given up on, see firstConnection). ioredis, an optional
 * peer, is loaded only here, so a service without Redis neither loads nor needs it. The caller disconnects it.
 */
export async function connectRedis (url: string, log: FastifyBaseLogger): Promise<RedisConnection> {
  const { Redis } = await importOptionalPeer('ioredis', 'REDIS_URL is set', () => import('ioredis'))
  // Fail fast instead of waiting: no queueing while Redis is away, and a Redis that accepts
  // connections but never answers times out; the login then answers 503 within seconds.
  // A connection that went silent is replaced, not kept: ioredis pairs replies with commands in
  // order and keeps timed-out ones in line, so once a reply is lost every later reply would go to
  // an older command and the client would never recover. Nothing is sent again on the new
  // connection (its caller already had its 503; a login slot taken late would stay held), and
  // reconnection retries stay frequent, so logins are served again within 2 s of Redis answering.
  const redis = new Redis(url, { ...FAIL_FAST, enableOfflineQueue: false, retryStrategy })
  return await connected(redis, log, false)
}

/** Every connection's fail-fast options (see connectRedis). */
const FAIL_FAST = {
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
  commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
  socketTimeout: REDIS_COMMAND_TIMEOUT_MS
}

const retryStrategy = (times: number): number => Math.min(times * 50, REDIS_RETRY_MAX_MS)

/** `host:port` seeds, as REDIS_CLUSTER_NODES lists them (an IPv6 address in brackets). */
export function clusterSeeds (setting: string): Array<{ host: string, port: number }> {
  return setting.split(',').map((seed) => {
    const at = seed.lastIndexOf(':')
    return { host: seed.slice(0, at).trim().replace(/^\[(.*)\]$/, '$1'), port: Number(seed.slice(at + 1)) }
  })
}

/**
 * The service's client of the Redis Cluster of REDIS_CLUSTER_NODES, with connectRedis's fail-fast rules on every
 * node's connection and on the cluster itself: no queue while the cluster is not ready, no retry of a command whose
 * node went away or whose cluster is down (the request answers 503, as with one server), slots asked again every
 * second and at every MOVED (which ioredis follows, as it follows ASK), so a promoted replica serves within 2 s.
 */
export async function connectRedisCluster (setting: string, log: FastifyBaseLogger): Promise<RedisConnection> {
  const { Cluster } = await importOptionalPeer('ioredis', 'REDIS_CLUSTER_NODES is set', () => import('ioredis'))
  const cluster = new Cluster(clusterSeeds(setting), {
    enableOfflineQueue: false,
    clusterRetryStrategy: retryStrategy,
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    slotsRefreshTimeout: REDIS_COMMAND_TIMEOUT_MS,
    // ioredis's own refresh timer (slotsRefreshInterval) is armed again by a refresh that was under way when the
    // client disconnected, and then runs forever: a host's process would never exit after closing the service.
    // The service's timer does not hold the process, and ends with the client.
    slotsRefreshInterval: 0,
    redisOptions: FAIL_FAST
  })
  const refresh = setInterval(() => { cluster.refreshSlotsCache() }, SLOTS_REFRESH_MS).unref()
  cluster.once('end', () => { clearInterval(refresh) })
  // ioredis connects to a node at its first command, and without an offline queue it refuses the commands sent to a
  // node still connecting: a first lookup of a slot on another node would answer 503. Every node is connected to as
  // soon as the cluster names it (a node that does not answer ends, and is named again by a later MOVED or refresh).
  cluster.on('+node', (node: Redis) => { node.connect().catch(() => {}) })
  return await connected(cluster, log, true)
}

async function connected (redis: RedisClient, log: FastifyBaseLogger, cluster: boolean): Promise<RedisConnection> {
  traceCommands(redis)
  const status = new DependencyStatus('redis', log, () => redis.ping())
  // Reconnection attempts fail again and again during an outage: the status logs the first failure only.
  redis.on('error', (error: unknown) => status.failed(error))
  redis.on('ready', () => status.succeeded())
  await firstConnection(redis)
  return { client: redis, status, cluster }
}
