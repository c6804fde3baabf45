import { Writable } from 'node:stream'
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import serviceApp, { type AppOptions } from '../../src/app.js'
import type { ConfigInput } from '../../src/config.js'

export const TEST_SECRET = 'test-secret-that-is-at-least-32-characters-long'

// The login rate limit is raised here; test/hardening.test.ts checks it with low values.
export const testConfig: ConfigInput = { JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent', LOGIN_RATE_LIMIT_MAX: 1000 }

// fp() marks the function it is given, so it gets a wrapper: the service's own export stays
// encapsulated (and honours a prefix) for tests that register it as a host would.
export const unencapsulatedApp = fp<AppOptions>((instance, opts) => serviceApp(instance, opts))

/**
 * A fresh, ready app that the caller closes. Registered without encapsulation here
 * (tests only) so that decorators such as app.catsStore and app.jwt are reachable. The long
 * plugin timeout is for PGlite, whose start can exceed Fastify's 10 s on a busy machine.
 */
export async function createApp (config: Partial<ConfigInput> = {}, options: Omit<AppOptions, 'config'> = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, pluginTimeout: 120_000 })
  await app.register(unencapsulatedApp, { config: { ...testConfig, ...config }, ...options })
  await app.ready()
  return app
}

/** A fresh app per test, closed on teardown. */
export async function build (t: Test, config: Partial<ConfigInput> = {}, options: Omit<AppOptions, 'config'> = {}): Promise<FastifyInstance> {
  const app = await createApp(config, options)
  t.teardown(() => app.close())
  return app
}

/** A token as the service signs it for a demo user, in a session of its own. */
export function tokenFor (app: FastifyInstance, sub: number | string = 1, username = 'john'): string {
  return app.jwt.sign({ sub, username, jti: randomUUID(), sid: randomUUID() })
}

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

/** A stream for a Fastify logger that keeps what was logged. */
export function logCapture (): { stream: Writable, text: () => string } {
  const lines: string[] = []
  const stream = new Writable({
    write (chunk, _encoding, done) {
      lines.push(String(chunk))
      done()
    }
  })
  return { stream, text: () => lines.join('') }
}
