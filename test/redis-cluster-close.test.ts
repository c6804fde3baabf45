import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { clusterMissing, startRedisCluster } from './support/redis-cluster.js'

// A host that closes the service while the cluster is silent (every node frozen by SIGSTOP, so a refresh of the slots
// is under way at the close) must be able to exit: the client keeps no timer of its own alive after it is closed.

const noCluster = clusterMissing()
if (noCluster !== undefined) {
  t.comment(`${noCluster}: the Redis Cluster close test was skipped`)
} else {
  t.test('a host closed while every node is silent exits by itself', async (t) => {
    const cluster = await startRedisCluster(t)
    const host = spawn(process.execPath, ['--import', './test/support/typescript.mjs', 'test/support/cluster-host.ts'], {
      env: { ...process.env, REDIS_CLUSTER_NODES: cluster.setting },
      stdio: ['pipe', 'pipe', 'inherit']
    })
    t.teardown(() => { if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL') })
    const lines = createInterface({ input: host.stdout })[Symbol.asyncIterator]()
    t.equal((await lines.next()).value, 'ready')
    for (const node of cluster.nodes) cluster.pause(node)
    t.teardown(() => { for (const node of cluster.nodes) cluster.resume(node) })
    // The slots are asked for every second, and a silent node is waited for up to a second per node: by now a
    // refresh is under way, and stays so until the close.
    await sleep(1500)
    host.stdin.end()
    t.equal((await lines.next()).value, 'closed')
    const exit = await Promise.race([once(host, 'exit'), sleep(5000).then(() => 'still running 5 s after the close')])
    t.same(exit, [0, null], 'the host process exited with 0')
  })
}
