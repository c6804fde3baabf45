import { keepNextTickShapes } from '../src/next-tick-shapes.js'
import { createFloorServer } from './floor-server.js'
import { loadConfig } from '../src/config.js'

// As the service's server and the baseline do.
keepNextTickShapes()

// Run by the benchmark (transpiled to dist/bench/ like the baseline): PORT, JWT_SECRET, FLOOR_CATS, FLOOR_HEADERS=1, FLOOR_METRICS=1, FLOOR_FEATURES=1.
const env = process.env
const app = createFloorServer({
  cats: Number(env.FLOOR_CATS ?? 1000),
  headers: env.FLOOR_HEADERS === '1',
  metrics: env.FLOOR_METRICS === '1',
  features: env.FLOOR_FEATURES === '1',
  // The service's settings for the same environment (JWT_SECRET among them).
  config: loadConfig(env)
})
await app.listen({ port: Number(env.PORT ?? 3002), host: '127.0.0.1' })

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app.close().then(() => process.exit(0), () => process.exit(1))
  })
}
