import { keepNextTickShapes } from '../src/next-tick-shapes.js'
import { createFloorServer } from './floor-server.js'
import { loadConfig } from '../src/config.js'
import { serverOptions } from '../src/http/server-options.js'

// As the service's server and the baseline do.
keepNextTickShapes()

// Run by the benchmark (transpiled to dist/bench/ like the baseline): PORT, JWT_SECRET, FLOOR_CATS, FLOOR_HEADERS=1, FLOOR_METRICS=1.
const env = process.env
const jwtSecret = env.JWT_SECRET ?? ''
const app = createFloorServer({
  cats: Number(env.FLOOR_CATS ?? 1000),
  jwtSecret,
  headers: env.FLOOR_HEADERS === '1',
  metrics: env.FLOOR_METRICS === '1',
  // The service's timeouts for the same environment, as the baseline has them.
  server: serverOptions(loadConfig({ ...env, JWT_SECRET: jwtSecret }))
})
await app.listen({ port: Number(env.PORT ?? 3002), host: '127.0.0.1' })

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app.close().then(() => process.exit(0), () => process.exit(1))
  })
}
