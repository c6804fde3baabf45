import { keepNextTickShapes } from '../src/next-tick-shapes.js'
import { createBaselineServer } from './baseline-server.js'
import { loadConfig } from '../src/config.js'
import { connectionSettings } from '../src/http/server-options.js'
import { collectDefaultMetrics, Registry } from 'prom-client'

// The same process set-up as the service's server (src/server.ts).
keepNextTickShapes()

// The bench runs this transpiled to dist/bench/ (see compileBaseline in servers.ts), without a loader.
const env = process.env
if (env.JWT_SECRET === undefined || env.JWT_SECRET.length < 32) {
  console.error('JWT_SECRET (at least 32 characters) is required')
  process.exit(1)
}
// BASELINE_METRICS=1: what the service does with metrics on, its request histogram and the default metrics.
const metrics = env.BASELINE_METRICS === '1' ? new Registry() : undefined
if (metrics !== undefined) collectDefaultMetrics({ register: metrics })

const server = createBaselineServer({
  jwtSecret: env.JWT_SECRET,
  catsMax: env.CATS_MAX === undefined ? undefined : Number(env.CATS_MAX),
  metrics,
  // The service's timeouts for the same environment, its idle-socket timeout among them.
  server: connectionSettings(loadConfig(env))
})
server.listen(Number(env.PORT ?? 3001), '127.0.0.1')
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
