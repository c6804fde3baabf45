import { spawn, execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { Cluster } from 'ioredis'
import { closedPort } from './ports.js'

/** A Redis Cluster of the test's own on loopback ports: its nodes' addresses and how to stop one. */
export interface RedisCluster {
  /** `host:port` of every node, masters first. */
  nodes: string[]
  /** The value for REDIS_CLUSTER_NODES. */
  setting: string
  /** Stops one node by its PID (SIGKILL), as a crash would. */
  kill: (node: string) => void
  /** Freezes one node (SIGSTOP): its connections stay open and it answers nothing, as a stalled host would. */
  pause: (node: string) => void
  /** Lets a paused node run again (SIGCONT). */
  resume: (node: string) => void
}

/** Whether the machine has redis-server and redis-cli; a reason to skip when not. */
export function clusterMissing (): string | undefined {
  try {
    execFileSync('redis-server', ['--version'])
    execFileSync('redis-cli', ['--version'])
    return undefined
  } catch {
    return 'redis-server and redis-cli are not installed (Debian package redis-server)'
  }
}

/**
 * Starts `masters` masters with `replicasPerMaster` replicas each, as child processes of this test (no disk, no
 * daemonizing), joins them with `redis-cli --cluster create` and waits until every node says `cluster_state:ok`.
 * Every node is stopped by its own PID on `t`'s teardown.
 */
export async function startRedisCluster (t: Pick<Test, 'teardown'>, masters = 3, replicasPerMaster = 1): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cats-redis-cluster-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const children = new Map<string, ReturnType<typeof spawn>>()
  for (let index = 0; index < masters * (1 + replicasPerMaster); index++) {
    const { node, child } = await startNode(dir)
    children.set(node, child)
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  }
  const nodes = [...children.keys()]
  execFileSync('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'], { stdio: 'ignore' })
  for (const node of nodes) await untilOk(node)
  for (const node of nodes) await untilSynchronised(node)
  return {
    nodes,
    setting: nodes.join(','),
    kill: (node) => { children.get(node)?.kill('SIGKILL') },
    pause: (node) => { children.get(node)?.kill('SIGSTOP') },
    resume: (node) => { children.get(node)?.kill('SIGCONT') }
  }
}

/** A command to one node, its reply as text. */
export function clusterCli (node: string, ...args: string[]): string {
  const [host, port] = node.split(':')
  // Its complaints (a node not up yet) go into the error it throws, not to the test's output.
  return execFileSync('redis-cli', ['-h', host, '-p', port, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

/**
 * One node on a port of its own, answering PING. A port found free can be taken before the node binds it (another
 * test's listener, or an outgoing connection's local port): the node then exits, and is started again on another.
 */
async function startNode (dir: string): Promise<{ node: string, child: ReturnType<typeof spawn> }> {
  for (let attempt = 1; ; attempt++) {
    const port = await closedPort()
    const nodeDir = join(dir, String(port))
    mkdirSync(nodeDir)
    const child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
      '--cluster-node-timeout', '1000', '--save', '', '--appendonly', 'no', '--dir', nodeDir,
      // A replica can be promoted only once it has synchronised: at once, not after Redis's default 5 s delay.
      '--repl-diskless-sync-delay', '0'
    ], { stdio: 'ignore' })
    const node = `127.0.0.1:${port}`
    // A loaded machine can take seconds to start a process: the deadline is generous.
    for (const started = Date.now(); child.exitCode === null && Date.now() - started < 30_000; await sleep(50)) {
      try {
        if (clusterCli(node, 'PING').trim() === 'PONG') return { node, child }
      } catch {}
    }
    child.kill('SIGKILL')
    if (attempt === 3) throw new Error(`Redis node ${node} did not start (3 ports tried)`)
  }
}

/** The master serving `slot`, and its replica, as `host:port` (from CLUSTER NODES: id, address, flags, master's id, …, slots). */
export function ownersOf (node: string, slot: number): { master: string, replica: string } {
  const nodes = clusterCli(node, 'CLUSTER', 'NODES').trim().split('\n').map((line) => line.split(' '))
  const address = (fields: string[]): string => fields[1].split('@')[0]
  const master = nodes.find((fields) => fields[2].includes('master') && fields.slice(8).some((range) => {
    const [first, last = first] = range.split('-').map(Number)
    return slot >= first && slot <= last
  }))
  const replica = nodes.find((fields) => fields[3] === master?.[0])
  if (master === undefined || replica === undefined) throw new Error(`no master and replica found for slot ${slot}`)
  return { master: address(master), replica: address(replica) }
}

/** A replica that never synchronised with its master is never promoted: waits until each has (masters pass at once). */
async function untilSynchronised (node: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const replication = clusterCli(node, 'INFO', 'replication')
    if (replication.includes('role:master') || replication.includes('master_link_status:up')) return
    await sleep(50)
  }
  throw new Error(`Redis replica ${node} never synchronised with its master`)
}

async function untilOk (node: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (clusterCli(node, 'CLUSTER', 'INFO').includes('cluster_state:ok')) return
    await sleep(50)
  }
  throw new Error(`Redis node ${node} never reached cluster_state:ok`)
}

/** A client of the cluster of the test's own (ioredis's defaults), disconnected on `t`'s teardown. */
export function clusterClient (t: Test, cluster: RedisCluster): Cluster {
  const client = new Cluster(cluster.nodes.map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) })))
  client.on('error', () => {})
  t.teardown(() => { client.disconnect() })
  return client
}

/**
 * Every key matching `pattern` on every master of the cluster: each node is asked its role, since a client's list of
 * masters holds every seed until its first slots refresh.
 */
export async function clusterKeys (client: Cluster, pattern: string): Promise<string[]> {
  const keys = await Promise.all(client.nodes('all').map(async (node) =>
    (await node.info('replication')).includes('role:master') ? await node.keys(pattern) : []))
  return keys.flat()
}
