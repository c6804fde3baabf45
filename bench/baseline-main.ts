import { keepNextTickShapes } from '../src/next-tick-shapes.js'
import { createBaselineServer } from './baseline-server.js'
import { loadConfig } from '../src/config.js'
import { connectionSettings } from '../src/http/server-options.js'
import { collectDefaultMetrics, Registry } from 'prom-client'

// The same process set-up as the service's server, so that nextTick's speed is not a draw on either side.
keepNextTickShapes()

// `node --import tsx bench/baseline-main.ts` runs it by hand; the benchmark runs it
// transpiled to dist/bench/ (see compileBaseline in servers.ts), without a loader.
const env = process.env
const secret = env.JWT_SECRET
if (secret === undefined || secret.length < 32) {
  console.error('JWT_SECRET (at least 32 characters) is required')
  process.exit(1)
}
const optional = (name: string): number | undefined => env[name] === undefined ? undefined : Number(env[name])

/** BASELINE_METRICS=1: what the service does with metrics on, its per-request histogram and the process's default metrics. */
function metricsRegistry (): Registry | undefined {
  if (env.BASELINE_METRICS !== '1') return undefined
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  return registry
}

const server = createBaselineServer({
  jwtSecret: secret,
  catsMax: optional('CATS_MAX'),
  bodyLimit: optional('BODY_LIMIT'),
  hashConcurrency: optional('HASH_CONCURRENCY'),
  hashQueueMax: optional('HASH_QUEUE_MAX'),
  headers: env.BASELINE_HEADERS !== '0',
  metrics: metricsRegistry(),
  // The service's timeouts for the same environment, its idle-socket timeout among them.
  server: connectionSettings(loadConfig(env))
})
const port = Number(env.PORT ?? 3001)
server.listen(port, '127.0.0.1', () => {
  console.log(`baseline listening on http://127.0.0.1:${port}`)
})

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0))
    server.closeAllConnections()
  })
}
