import { keepNextTickShapes } from '../src/next-tick-shapes.js'
import { createBaselineServer } from './baseline-server.js'
import { loadConfig } from '../src/config.js'
import { collectDefaultMetrics, Registry } from 'prom-client'

// The same process set-up as the service's server (src/server.ts).
keepNextTickShapes()

// The bench runs this transpiled to dist/bench/ (see compileBaseline in servers.ts), without a loader. It reads the
// service's settings from the same environment: JWT_SECRET, the limits and the timeouts.
const config = loadConfig(process.env)
if (config.JWT_ALGORITHM !== 'HS256') throw new Error('The baseline signs with HS256 only: unset JWT_ALGORITHM')
// BASELINE_METRICS=1: what the service does with metrics on, its request histogram and the default metrics.
const metrics = process.env.BASELINE_METRICS === '1' ? new Registry() : undefined
if (metrics !== undefined) collectDefaultMetrics({ register: metrics })

const server = createBaselineServer(config, metrics)
server.listen(config.PORT, '127.0.0.1')
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
