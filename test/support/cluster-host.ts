// A host process that registers the service over the Redis Cluster of REDIS_CLUSTER_NODES, says `ready`, and closes
// the host when its stdin ends; then nothing should keep it running (test/redis-cluster-close.test.ts).
import Fastify from 'fastify'
import serviceApp from '../../src/app.js'
import { testConfig } from './app.js'
import { cheapDemoUsers } from './cheap-users.js'

const host = Fastify()
await host.register(serviceApp, { config: { ...testConfig, REDIS_CLUSTER_NODES: process.env.REDIS_CLUSTER_NODES }, users: await cheapDemoUsers() })
await host.ready()
process.stdout.write('ready\n')
process.stdin.resume().once('end', () => {
  host.close().then(() => { process.stdout.write('closed\n') }, (error: unknown) => { console.error(error) })
})
