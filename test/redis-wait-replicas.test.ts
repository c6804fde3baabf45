import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { bearer, createApp } from './support/app.js'
import { cheapDemoUsers } from './support/cheap-users.js'
import { closedPort } from './support/ports.js'
import { clusterCli, clusterMissing, ownersOf, startRedisCluster } from './support/redis-cluster.js'
import { TcpProxy } from './support/tcp-proxy.js'
import type { UserRecord } from '../src/auth/login/users-file.js'
import calculateSlot from 'cluster-key-slot'
import { ACKNOWLEDGED_WITHIN_MS, connectRedis, connectRedisCluster } from '../src/redis-connection.js'

// REDIS_WAIT_REPLICAS against a real master and a replica whose replication link goes through a proxy the test
// stalls: a logout is answered 204 only once the replica has its denial and its session's end, so promoting the
// lagging replica (REPLICAOF NO ONE, which does not sync first) loses none of them; without the setting, the
// logouts answered while the link was stalled are lost by that promotion, as docs/operations.md warns.

const LOGOUTS = 50
const sidOf = (accessToken: string): string => JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).sid

/** A master, a replica of it through a proxy, and test clients of both. */
interface Replicated {
  masterUrl: string
  replicaUrl: string
  master: Redis
  replica: Redis
  /** Holds every byte of the replication link (both ways): the replica falls behind, and acknowledges nothing. */
  stall: () => void
  /** Drops the stalled link: the replica connects again and catches up (partial resynchronisation). */
  heal: () => Promise<void>
}

/**
 * A redis-server of the test's own on a loopback port, stopped by its PID on teardown. No persistence; its directory
 * is a temporary one of its own, where a replica keeps the copy its master sends it at synchronisation.
 */
async function redisServer (t: Test, ...args: string[]): Promise<{ port: number, url: string, client: Redis }> {
  const port = await closedPort()
  const dir = mkdtempSync(join(tmpdir(), 'cats-redis-wait-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args], { stdio: 'ignore' })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  for (let attempt = 0; ; attempt++) {
    try {
      if (clusterCli(`127.0.0.1:${port}`, 'PING').trim() === 'PONG') break
    } catch {}
    if (attempt === 100) throw new Error(`redis-server on port ${port} did not start`)
    await sleep(50)
  }
  const client = new Redis({ host: '127.0.0.1', port })
  client.on('error', () => {})
  t.teardown(() => { client.disconnect() })
  return { port, url: `redis://127.0.0.1:${port}`, client }
}

async function replicated (t: Test): Promise<Replicated> {
  // A replica synchronises at once, not after Redis's default 5 s wait for more replicas.
  const master = await redisServer(t, '--repl-diskless-sync-delay', '0')
  const proxy = new TcpProxy(new URL(master.url))
  await proxy.start()
  t.teardown(() => proxy.stop())
  const replica = await redisServer(t, '--replicaof', '127.0.0.1', String(proxy.port))
  await untilSynchronised(replica.client)
  return {
    masterUrl: master.url,
    replicaUrl: replica.url,
    master: master.client,
    replica: replica.client,
    stall: () => { proxy.silent = true },
    heal: async () => {
      await proxy.stop()
      proxy.silent = false
      await proxy.start()
      await untilSynchronised(replica.client)
    }
  }
}

async function untilSynchronised (replica: Redis): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if ((await replica.info('replication')).includes('master_link_status:up')) return
    await sleep(50)
  }
  throw new Error('the replica never synchronised with its master')
}

/** Waits until the replica has every write the master has (the test's own check, not the service's). */
async function caughtUp (master: Redis): Promise<void> {
  if (await master.wait(1, 5000) < 1) throw new Error('the replica did not catch up')
}

async function readyApp (t: Test, config: Record<string, string | number | boolean>, users: UserRecord[]): Promise<FastifyInstance> {
  const app = await createApp({ REFRESH_TOKENS: true, ...config }, { users })
  t.teardown(() => app.close())
  for (let wait = 0; (await app.inject('/health/ready')).statusCode !== 200; wait++) {
    if (wait === 100) throw new Error('the app did not become ready')
    await sleep(100)
  }
  return app
}

async function logins (app: FastifyInstance, count: number): Promise<string[]> {
  const tokens: string[] = []
  for (let index = 0; index < count; index++) {
    const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })
    tokens.push(res.json().access_token)
  }
  return tokens
}

const logout = async (app: FastifyInstance, token: string, scope = 'local'): Promise<{ status: number, code: string | undefined, ms: number }> => {
  const started = Date.now()
  const res = await app.inject({ method: 'POST', url: `/auth/logout?scope=${scope}`, headers: bearer(token) })
  return { status: res.statusCode, code: res.statusCode === 204 ? undefined : res.json().code, ms: Date.now() - started }
}

/** The tokens the app serves /profile to (their logouts, when answered, were lost). */
async function served (app: FastifyInstance, tokens: string[]): Promise<string[]> {
  const statuses = await Promise.all(tokens.map(async (token) => (await app.inject({ url: '/profile', headers: bearer(token) })).statusCode))
  return tokens.filter((_token, index) => statuses[index] === 200)
}

/** Promotes the lagging replica without syncing (the master is left as it is, unreachable to the service from then on). */
async function promote (replica: Redis): Promise<void> {
  await replica.call('REPLICAOF', 'NO', 'ONE')
  if (!(await replica.info('replication')).includes('role:master')) throw new Error('the replica was not promoted')
}

/** Whether a replica of the cluster has `key` (asked with READONLY: a replica otherwise answers MOVED). */
async function replicaHas (t: Test, replica: string, key: string): Promise<boolean> {
  const [host, port] = replica.split(':')
  const client = new Redis({ host, port: Number(port) })
  t.teardown(() => { client.disconnect() })
  await client.call('READONLY')
  return await client.exists(key) === 1
}

t.test('the acknowledged writes of a cluster whose slots are not known yet: refused, never sent elsewhere', async (t) => {
  const connection = await connectRedisCluster(`127.0.0.1:${await closedPort()}`, Fastify({ logger: false }).log, 1)
  t.teardown(() => {
    connection.client.disconnect()
    connection.acknowledged?.close()
  })
  const acknowledged = connection.acknowledged
  if (acknowledged === undefined) throw new Error('REDIS_WAIT_REPLICAS=1 gave no acknowledged writes')
  t.equal(acknowledged.replicas, 1)
  await t.rejects(acknowledged.write('key', async (client) => { await client.set('key', '1') }), /slot 12539 is not known yet/)
})

const noRedis = clusterMissing()
if (noRedis !== undefined) {
  t.comment(`${noRedis}: the REDIS_WAIT_REPLICAS tests were skipped`)
} else {
  t.test('a healthy link, REDIS_WAIT_REPLICAS=1: every logout 204, its denial and its end on the replica when answered', async (t) => {
    const redis = await replicated(t)
    const app = await readyApp(t, { REDIS_URL: redis.masterUrl, REDIS_WAIT_REPLICAS: 1 }, await cheapDemoUsers())
    const tokens = await logins(app, LOGOUTS)
    // At once: the acknowledged writes take turns on their connection, each WAIT answered as soon as the replica has it.
    const answers = await Promise.all(tokens.map(async (token) => {
      const answer = await logout(app, token)
      const sid = sidOf(token)
      const onReplica = answer.status === 204 &&
        await redis.replica.exists(`cats-api:revoked:${sid}`) === 1 && await redis.replica.hget(`cats-api:session:${sid}`, 'ended') === '1'
      return { ...answer, onReplica }
    }))
    t.same(answers.map(({ status }) => status), tokens.map(() => 204), `${LOGOUTS} logouts, all 204`)
    t.equal(answers.filter(({ onReplica }) => onReplica).length, LOGOUTS, 'each denial and end was on the replica when its 204 came')
    t.comment(`healthy link: ${LOGOUTS} logouts answered 204 in at most ${Math.max(...answers.map(({ ms }) => ms))} ms each, all on the replica`)

    // A token of a denied session ends nothing but its own session: others and global are refused.
    const [kept, other] = await logins(app, 2)
    t.equal((await logout(app, kept, 'others')).status, 204, 'a live token ends its user\'s other sessions')
    t.equal((await app.inject({ url: '/profile', headers: bearer(other) })).statusCode, 401, 'the other session is denied')
    const refused = await logout(app, other, 'others')
    t.same([refused.status, refused.code], [401, 'AUTH_ERR_INVALID_TOKEN'], 'a denied token cannot end others')
    t.equal((await logout(app, other, 'global')).status, 401, 'nor every session')
    t.equal((await app.inject({ url: '/profile', headers: bearer(kept) })).statusCode, 200, 'the session that ended the others goes on')
    // A retry writes even when its first attempt's writes are on the master already, so that its WAIT covers them.
    const offset = async (): Promise<number> => Number(/master_repl_offset:(\d+)/.exec(await redis.master.info('replication'))?.[1])
    const before = await offset()
    t.equal((await logout(app, other)).status, 204, 'a denied token\'s own logout again: 204 (written and waited for again)')
    const afterLocal = await offset()
    t.ok(afterLocal > before, 'its denial and its end were written again')
    t.equal((await logout(app, kept, 'others')).status, 204, 'others again, with none left to end: 204')
    t.ok(await offset() > afterLocal, 'and a write was made for its WAIT to cover')
  })

  t.test('a stalled link, REDIS_WAIT_REPLICAS=1: 503 within 1 s, retried 204, and no acknowledged logout lost at the promotion', async (t) => {
    const redis = await replicated(t)
    const users = await cheapDemoUsers()
    const app = await readyApp(t, { REDIS_URL: redis.masterUrl, REDIS_WAIT_REPLICAS: 1 }, users)
    const tokens = await logins(app, LOGOUTS)
    await caughtUp(redis.master)
    const half = LOGOUTS / 2
    const acknowledged: string[] = []
    for (const token of tokens.slice(0, half)) {
      if ((await logout(app, token)).status === 204) acknowledged.push(token)
    }
    t.equal(acknowledged.length, half, `${half} logouts on a healthy link: 204`)

    redis.stall()
    const stalled = tokens.slice(half)
    const failed = await Promise.all(stalled.map(async (token) => await logout(app, token)))
    t.same(failed.map(({ status, code }) => ({ status, code })), stalled.map(() => ({ status: 503, code: 'AUTH_ERR_SESSION_STORE_UNAVAILABLE' })),
      `${stalled.length} logouts on a stalled link: 503, the session store's code`)
    const slowest = Math.max(...failed.map(({ ms }) => ms))
    t.ok(slowest < 2000, `each answered within the 1 s command deadline, give or take the test's own work (slowest ${slowest} ms)`)
    t.comment(`stalled link: ${stalled.length} logouts answered 503 in at most ${slowest} ms each`)
    t.equal((await app.inject({ url: '/profile', headers: bearer(stalled[0]) })).statusCode, 401, 'the master has the denial: the token is refused')

    // The retry, with a token whose denial the master has: written and waited for again, 204 once the replica has it.
    await redis.heal()
    const retried = stalled.slice(0, stalled.length - 5)
    for (const token of retried) {
      if ((await logout(app, token)).status === 204) acknowledged.push(token)
    }
    t.equal(acknowledged.length, half + retried.length, `${retried.length} retries after the link healed: 204`)

    // Stalled again, the last logouts are refused once more; then the lagging replica is promoted without syncing.
    redis.stall()
    const unanswered = stalled.slice(retried.length)
    t.same((await Promise.all(unanswered.map(async (token) => (await logout(app, token)).status))), unanswered.map(() => 503), 'stalled again: 503')
    await promote(redis.replica)
    const promoted = await readyApp(t, { REDIS_URL: redis.replicaUrl }, users)
    const lost = await served(promoted, acknowledged)
    t.equal(lost.length, 0, `of ${acknowledged.length} logouts answered 204, none is lost on the promoted replica`)
    t.comment(`with REDIS_WAIT_REPLICAS=1: ${acknowledged.length} logouts acknowledged, ${lost.length} lost when the lagging replica was promoted`)
    const sessionsEnded = await Promise.all(acknowledged.map(async (token) => await redis.replica.hget(`cats-api:session:${sidOf(token)}`, 'ended')))
    t.ok(sessionsEnded.every((ended) => ended === '1'), 'and every acknowledged session end is there')
  })

  t.test('the write and its WAIT within 900 ms: no replica, or no time left, rejects', async (t) => {
    const server = await redisServer(t)
    const connection = await connectRedis(server.url, Fastify({ logger: false }).log, 1)
    t.teardown(() => {
      connection.client.disconnect()
      connection.acknowledged?.close()
    })
    const acknowledged = connection.acknowledged
    if (acknowledged === undefined) throw new Error('REDIS_WAIT_REPLICAS=1 gave no acknowledged writes')
    let started = Date.now()
    await t.rejects(acknowledged.write('key', async (client) => { await client.set('key', '1') }), { message: `0 of the 1 replicas of REDIS_WAIT_REPLICAS had the write within ${ACKNOWLEDGED_WITHIN_MS} ms` })
    const waitedMs = Date.now() - started
    t.ok(waitedMs >= ACKNOWLEDGED_WITHIN_MS - 50 && waitedMs < 1500, `a server without replicas: refused after the wait (${waitedMs} ms)`)
    started = Date.now()
    await t.rejects(acknowledged.write('key', async (client) => {
      await client.set('key', '2')
      await sleep(ACKNOWLEDGED_WITHIN_MS)
    }), { message: `the write left no time to wait for the replicas of REDIS_WAIT_REPLICAS within ${ACKNOWLEDGED_WITHIN_MS} ms` })
    t.ok(Date.now() - started < 1200, 'a write that took the whole time: refused at once, without a WAIT')
  })

  t.test('a stalled link, no REDIS_WAIT_REPLICAS: logouts answered 204 are lost when the lagging replica is promoted', async (t) => {
    const redis = await replicated(t)
    const users = await cheapDemoUsers()
    const app = await readyApp(t, { REDIS_URL: redis.masterUrl }, users)
    const tokens = await logins(app, LOGOUTS)
    await caughtUp(redis.master)
    redis.stall()
    const statuses = await Promise.all(tokens.map(async (token) => (await logout(app, token)).status))
    t.same(statuses, tokens.map(() => 204), `${LOGOUTS} logouts on a stalled link: 204, nothing waited for`)
    t.equal((await served(app, tokens)).length, 0, 'the master refuses every token')
    await promote(redis.replica)
    const promoted = await readyApp(t, { REDIS_URL: redis.replicaUrl }, users)
    const lost = await served(promoted, tokens)
    t.equal(lost.length, LOGOUTS, `every one of the ${LOGOUTS} acknowledged logouts is lost: the promoted replica serves its token`)
    t.comment(`without REDIS_WAIT_REPLICAS: ${LOGOUTS} logouts acknowledged, ${lost.length} lost when the lagging replica was promoted`)
  })

  t.test('a Redis Cluster, REDIS_WAIT_REPLICAS=1: 204 once the owning master\'s replica has it; 503 while it is stalled or its master gone', async (t) => {
    const cluster = await startRedisCluster(t)
    for (const key of ['cats-api:revoked:x', 'cats-api:{u:1}session:y', 'a{}b', 'a{b']) {
      t.equal(calculateSlot(key), Number(clusterCli(cluster.nodes[0], 'CLUSTER', 'KEYSLOT', key).trim()), `the slot of ${key}, as the cluster counts it`)
    }
    const app = await readyApp(t, { REDIS_CLUSTER_NODES: cluster.setting, REDIS_WAIT_REPLICAS: 1 }, await cheapDemoUsers())
    const tokens = await logins(app, 20)
    // john's sessions are under {u:1}; each denial is in a slot of its own id's.
    const { master, replica } = ownersOf(cluster.nodes[0], calculateSlot('u:1'))
    let onReplicas = 0
    for (const token of tokens.slice(0, 10)) {
      t.equal((await logout(app, token)).status, 204)
      const sid = sidOf(token)
      const denial = `cats-api:revoked:${sid}`
      if (await replicaHas(t, ownersOf(cluster.nodes[0], calculateSlot(denial)).replica, denial) &&
        await replicaHas(t, replica, `cats-api:{u:1}session:${sid}`)) onReplicas++
    }
    t.equal(onReplicas, 10, 'each denial and end was on the replica of its master when the 204 came')
    t.comment(`Redis Cluster: 10 logouts answered 204, ${onReplicas} with their denial and end on the owning master's replica`)

    // The replica of john's sessions frozen: the ends cannot be acknowledged.
    cluster.pause(replica)
    const stalled = await logout(app, tokens[10])
    t.same([stalled.status, stalled.code], [503, 'AUTH_ERR_SESSION_STORE_UNAVAILABLE'], 'a frozen replica: 503 with the session store\'s code')
    t.ok(stalled.ms < 2000, `within the 1 s deadline (${stalled.ms} ms)`)
    cluster.resume(replica)
    t.equal((await logout(app, tokens[10])).status, 204, 'its retry once the replica runs again: 204')

    // The master of john's sessions killed: until the slots move, their writes find no master, and answer 503.
    cluster.kill(master)
    await sleep(200)
    const gone = await logout(app, tokens[11])
    t.same([gone.status, gone.code], [503, 'AUTH_ERR_SESSION_STORE_UNAVAILABLE'], 'a master gone: 503')
  })
}
