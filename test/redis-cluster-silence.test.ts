import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { createApp, bearer } from './support/app.js'
import { cheapDemoUsers } from './support/cheap-users.js'
import { clusterCli, clusterMissing, startRedisCluster } from './support/redis-cluster.js'

// Masters of the service's Redis Cluster that stop answering (frozen by SIGSTOP, their connections open; all of them,
// so that no replica wins an election and every key the guard reads is silent) are handled as a single server's
// outage is: 503 with the session store's code while they are silent, never a hang, and served within 2 s of the
// cluster answering again.

const RECOVERY_MS = 2000

/** Waits until every node answers and says cluster_state:ok. */
async function untilClusterOk (nodes: string[]): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    try {
      if (nodes.every((node) => clusterCli(node, 'CLUSTER', 'INFO').includes('cluster_state:ok'))) return
    } catch {}
    await sleep(25)
  }
  throw new Error('the cluster did not answer cluster_state:ok within 10 s')
}

const noCluster = clusterMissing()
if (noCluster !== undefined) {
  t.comment(`${noCluster}: the Redis Cluster silence test was skipped`)
} else {
  t.test('masters that stop answering: 503 while silent, served within 2 s of the cluster answering', async (t) => {
    const cluster = await startRedisCluster(t)
    const app = await createApp({ REDIS_CLUSTER_NODES: cluster.setting }, { users: await cheapDemoUsers() })
    t.teardown(() => app.close())
    await untilClusterOk(cluster.nodes)
    const { access_token: token } = (await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })).json()
    t.equal((await app.inject({ url: '/profile', headers: bearer(token) })).statusCode, 200)
    const masters = cluster.nodes.filter((node) => clusterCli(node, 'ROLE').startsWith('master'))
    for (const node of masters) cluster.pause(node)
    t.teardown(() => { for (const node of masters) cluster.resume(node) })

    const during: Array<{ status: number, code: string, ms: number }> = []
    for (const started = Date.now(); Date.now() - started < 3000;) {
      const sent = Date.now()
      const res = await app.inject({ url: '/profile', headers: bearer(token) })
      during.push({ status: res.statusCode, code: res.json().code, ms: Date.now() - sent })
    }
    for (const node of masters) cluster.resume(node)
    t.ok(during.length >= 2 && during.every(({ status, code }) => status === 503 && code === 'AUTH_ERR_SESSION_STORE_UNAVAILABLE'),
      `${during.length} guarded requests while silent, all 503 with the session store's code`)
    const slowest = Math.max(...during.map(({ ms }) => ms))
    t.ok(slowest < 1500, `none hung: the slowest answered in ${slowest} ms`)

    await untilClusterOk(cluster.nodes)
    const answering = Date.now()
    let servedAfter: number | undefined
    while (Date.now() - answering < 5000) {
      if ((await app.inject({ url: '/profile', headers: bearer(token) })).statusCode === 200) {
        servedAfter = Date.now() - answering
        break
      }
      await sleep(50)
    }
    t.comment(`served ${servedAfter ?? 'never'} ms after every node said cluster_state:ok`)
    t.ok(servedAfter !== undefined && servedAfter <= RECOVERY_MS, `served within ${RECOVERY_MS} ms of the cluster answering`)
    t.ok(masters.every((node) => clusterCli(node, 'ROLE').startsWith('master')), 'no failover happened: the silent masters serve their slots again')
  })
}
