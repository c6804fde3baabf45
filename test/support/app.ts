import { Writable } from 'node:stream'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { Test } from 'tap'
import serviceApp, { type AppOptions } from '../../src/app.js'
import type { ConfigInput } from '../../src/config.js'
import type { ServiceDecorators } from '../../src/service-scope.js'
import { accessTokenSigner } from '../../src/auth/tokens/jwt-options.js'
import { openapiResponseChecker } from './openapi-responses.js'

export const TEST_SECRET = 'test-secret-that-is-at-least-32-characters-long'

// A long wait for a password-hash slot: hashes run below request priority, so on a busy machine running the
// suite a waiting login could pass the default 3 s bound and get 503. The tests of that bound set their own.
// No shedding on event-loop delay: a test process starved of CPU by the others would get 503s its test did not ask
// for. The tests of load shedding set their own limits.
export const testConfig: ConfigInput = { JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent', HASH_QUEUE_WAIT_MS: 120_000, MAX_EVENT_LOOP_DELAY_MS: 0 }

// The tests reach the service's decorators through `unencapsulatedApp`; their types are declared for the tests only
// (the package itself adds nothing to Fastify's interfaces).
declare module 'fastify' {
  interface FastifyInstance extends ServiceDecorators {}
}

// fp() marks the function it is given, so it gets a wrapper: the service's own export stays
// encapsulated (and honours a prefix) for tests that register it as a host would.
export const unencapsulatedApp = fp<AppOptions>((instance, opts) => serviceApp(instance, opts))

/** One checker per OpenAPI document (apps of the same configuration have the same one): compiling its schemas takes time. */
const checkers = new Map<string, ReturnType<typeof openapiResponseChecker>>()
function checkerFor (document: unknown): ReturnType<typeof openapiResponseChecker> {
  const key = JSON.stringify(document)
  const check = checkers.get(key) ?? openapiResponseChecker(document)
  checkers.set(key, check)
  return check
}

/**
 * A fresh, ready app that the caller closes, built on `unencapsulatedApp` (so that
 * decorators such as app.catsStore and app.catsSessions are reachable). The long plugin
 * timeout is for PGlite, whose start can exceed Fastify's 10 s on a busy machine.
 * Every `app.inject` response is checked against the app's own OpenAPI
 * document: one that does not match it rejects, so the test fails.
 */
export async function createApp (config: Partial<ConfigInput> = {}, options: Omit<AppOptions, 'config'> = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, pluginTimeout: 120_000 })
  const routeOf = new WeakMap<IncomingMessage, string>()
  app.addHook('onSend', async (request) => {
    if (request.routeOptions.url !== undefined) routeOf.set(request.raw, request.routeOptions.url)
  })
  await app.register(unencapsulatedApp, { config: { ...testConfig, ...config }, ...options })
  await app.ready()

  const check = checkerFor(app.swagger())
  const inject = app.inject.bind(app)
  const checkedInject = async (request: InjectOptions | string) => {
    const response = await inject(request)
    const route = routeOf.get(response.raw.req)
    const mismatch = route === undefined
      ? undefined
      : check({
        method: String(response.raw.req.method),
        route,
        statusCode: response.statusCode,
        contentType: String(response.headers['content-type']),
        body: response.body
      })
    if (mismatch !== undefined) throw new Error(`response does not match the OpenAPI document: ${mismatch}`)
    return response
  }
  // Only the promise forms of inject are used in the tests; the chainable form is not wrapped.
  app.inject = checkedInject as FastifyInstance['inject']
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
  return accessTokenSigner(app.catsConfig, app.catsTokenKeys)({ sub, username, jti: randomUUID(), sid: randomUUID() })
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
