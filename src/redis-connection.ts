import type { Cluster, Command, Redis } from 'ioredis'
import calculateSlot from 'cluster-key-slot'
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
   * (a user's session keys under the user's hash tag, see src/auth/sessions/redis-session-store.ts).
   */
  cluster: boolean
  /** With REDIS_WAIT_REPLICAS: the writes that wait for that many replicas before they are answered. */
  acknowledged?: AcknowledgedWrites
}

/**
 * Writes that are answered only once REDIS_WAIT_REPLICAS replicas have them: each runs on a connection of its own to
 * the master that owns its key, followed by `WAIT` on that same connection (`WAIT` counts the writes of its own
 * connection, and blocks it: the service's client, which carries every guarded request, is never kept waiting).
 */
export interface AcknowledgedWrites {
  /** The replicas each write waits for. */
  readonly replicas: number
  /**
   * Runs `write` (every key it touches in the slot of `key`) on the connection to the master of `key`, then waits for
   * the replicas, `ACKNOWLEDGED_WITHIN_MS` at most from the write's start; rejects when fewer have it (or on any
   * failure). A write is idempotent, so the caller's retry writes and waits again.
   */
  write: <T>(key: string, write: (client: Redis) => Promise<T>) => Promise<T>
  /** Gives every connection, those opened later included, what `add` defines on it (scripts). */
  define: (add: (client: Redis) => void) => void
  close: () => void
}

/**
 * The longest a write and its `WAIT` take together (in a cluster, with the connection to a master not connected to
 * yet): below the connection's command and socket timeouts (1 s), so a `WAIT` that runs out is answered (with the
 * replicas it counted) rather than cut off, and the connection is kept.
 */
export const ACKNOWLEDGED_WITHIN_MS = 900

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
export async function connectRedis (url: string, log: FastifyBaseLogger, waitReplicas = 0): Promise<RedisConnection> {
  const { Redis } = await importOptionalPeer('ioredis', 'REDIS_URL is set', () => import('ioredis'))
  // Fail fast instead of waiting: no queueing while Redis is away, and a Redis that accepts
  // connections but never answers times out; the login then answers 503 within seconds.
  // A connection that went silent is replaced, not kept: ioredis pairs replies with commands in
  // order and keeps timed-out ones in line, so once a reply is lost every later reply would go to
  // an older command and the client would never recover. Nothing is sent again on the new
  // connection (its caller already had its 503; a login slot taken late would stay held), and
  // reconnection retries stay frequent, so logins are served again within 2 s of Redis answering.
  const redis = new Redis(url, { ...FAIL_FAST, enableOfflineQueue: false, retryStrategy })
  const connection = await connected(redis, log, false)
  if (waitReplicas === 0) return connection
  // The same rules on the connection of the acknowledged writes, connected at the same time as the client's.
  const writes = new Redis(url, { ...FAIL_FAST, enableOfflineQueue: false, retryStrategy })
  writes.on('error', () => {})
  traceCommands(writes)
  await firstConnection(writes)
  return { ...connection, acknowledged: new ServerWrites(writes, waitReplicas) }
}

/**
 * Runs `write` on `client`, then `WAIT`s for `replicas`, all within ACKNOWLEDGED_WITHIN_MS of `started`; throws when
 * fewer replicas have it, or when the write left no time to wait.
 */
async function acknowledgedWrite<T> (client: Redis, replicas: number, write: (client: Redis) => Promise<T>, started = Date.now()): Promise<T> {
  const result = await write(client)
  const leftMs = ACKNOWLEDGED_WITHIN_MS - (Date.now() - started)
  // WAIT 0 would wait for ever.
  if (leftMs < 1) throw new Error(`the write left no time to wait for the replicas of REDIS_WAIT_REPLICAS within ${ACKNOWLEDGED_WITHIN_MS} ms`)
  const reached = await client.wait(replicas, leftMs)
  if (reached < replicas) {
    throw new Error(`${reached} of the ${replicas} replicas of REDIS_WAIT_REPLICAS had the write within ${ACKNOWLEDGED_WITHIN_MS} ms`)
  }
  return result
}

/** The acknowledged writes of one server (REDIS_URL): one connection of their own to it. */
class ServerWrites implements AcknowledgedWrites {
  readonly replicas: number
  readonly #client: Redis

  constructor (client: Redis, replicas: number) {
    this.#client = client
    this.replicas = replicas
  }

  async write<T> (_key: string, write: (client: Redis) => Promise<T>): Promise<T> {
    return await acknowledgedWrite(this.#client, this.replicas, write)
  }

  define (add: (client: Redis) => void): void {
    add(this.#client)
  }

  close (): void {
    this.#client.disconnect()
  }
}

/**
 * The acknowledged writes of a Redis Cluster: a connection of their own to each master that takes one, found by the
 * key's slot in the service's cluster client's map of slots (refreshed every second and at every MOVED). A write that
 * reaches a node which no longer owns the slot is refused by it (MOVED), and the request answers 503; so does a write
 * whose master is not known or cannot be reached. A connection that closes is not reopened until the next write.
 */
class ClusterWrites implements AcknowledgedWrites {
  readonly replicas: number
  readonly #cluster: Cluster
  readonly #open: (host: string, port: number) => Redis
  readonly #connections = new Map<string, Promise<Redis>>()
  readonly #clients = new Set<Redis>()
  readonly #definitions: Array<(client: Redis) => void> = []

  constructor (cluster: Cluster, replicas: number, open: (host: string, port: number) => Redis) {
    this.#cluster = cluster
    this.replicas = replicas
    this.#open = open
  }

  async write<T> (key: string, write: (client: Redis) => Promise<T>): Promise<T> {
    const started = Date.now()
    const master = this.#cluster.slots[calculateSlot(key)]?.[0]
    if (master === undefined) throw new Error(`the master of Redis Cluster slot ${calculateSlot(key)} is not known yet`)
    return await acknowledgedWrite(await this.#connection(master), this.replicas, write, started)
  }

  define (add: (client: Redis) => void): void {
    this.#definitions.push(add)
  }

  close (): void {
    for (const client of this.#clients) client.disconnect()
  }

  async #connection (node: string): Promise<Redis> {
    const known = this.#connections.get(node)
    if (known !== undefined) return await known
    const at = node.lastIndexOf(':')
    const client = this.#open(node.slice(0, at), Number(node.slice(at + 1)))
    for (const add of this.#definitions) add(client)
    const forget = (): void => { if (this.#connections.get(node) === opened) this.#connections.delete(node) }
    this.#clients.add(client)
    client.on('error', () => {})
    client.once('end', () => {
      this.#clients.delete(client)
      forget()
    })
    const opened = client.connect().then(() => client, (error: unknown) => {
      forget()
      client.disconnect()
      throw error
    })
    this.#connections.set(node, opened)
    return await opened
  }
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
export async function connectRedisCluster (setting: string, log: FastifyBaseLogger, waitReplicas = 0): Promise<RedisConnection> {
  const { Cluster, Redis } = await importOptionalPeer('ioredis', 'REDIS_CLUSTER_NODES is set', () => import('ioredis'))
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
  const connection = await connected(cluster, log, true)
  if (waitReplicas === 0) return connection
  // No reconnection: a master that goes away may never come back as one; the next write to its slots opens anew.
  const acknowledged = new ClusterWrites(cluster, waitReplicas, (host, port) => {
    const client = new Redis({
      ...FAIL_FAST, host, port, connectTimeout: ACKNOWLEDGED_WITHIN_MS, enableOfflineQueue: false, lazyConnect: true, retryStrategy: () => null
    })
    traceCommands(client)
    return client
  })
  return { ...connection, acknowledged }
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
