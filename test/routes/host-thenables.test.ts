import t from 'tap'
import Fastify from 'fastify'
import serviceApp, { catsService } from '../../src/app.js'
import { bearer, build, testConfig, tokenFor } from '../support/app.js'
import { hostAnswer, mapMaybePromise } from '../../src/maybe-promise.js'

// A host's validateToken or isRevoked may answer with any thenable, as `await` accepts: it is a promise
// of the answer, never the answer itself (an object would pass for an identity, or for "revoked").

/** A thenable that is not a native Promise, settled on a later turn. */
class Thenable<T> implements PromiseLike<T> {
  readonly #outcome: { value: T } | { reason: unknown }

  constructor (outcome: { value: T } | { reason: unknown }) {
    this.#outcome = outcome
  }

  then<R1 = T, R2 = never> (
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null
  ): PromiseLike<R1 | R2> {
    const outcome = this.#outcome
    const settled = new Promise<T>((resolve, reject) => {
      setImmediate(() => { if ('value' in outcome) resolve(outcome.value); else reject(outcome.reason) })
    })
    return settled.then(onfulfilled, onrejected)
  }
}

const resolving = <T>(value: T): Thenable<T> => new Thenable({ value })

t.test('hostAnswer: a plain answer stays as it is, a native promise too, any other thenable becomes a promise of its value', async (t) => {
  t.equal(hostAnswer(true), true)
  t.equal(hostAnswer(undefined), undefined)
  const identity = { userId: 1, username: 'john' }
  t.equal(hostAnswer(identity), identity, 'an object without then')
  t.equal(hostAnswer(null), null)
  const native = Promise.resolve(false)
  t.equal(hostAnswer(native), native)
  const thenable = hostAnswer(resolving(false))
  t.ok(thenable instanceof Promise)
  t.equal(await thenable, false)
  const callable = Object.assign(() => 1, { then: (resolve: (value: number) => void) => { resolve(7) } })
  t.equal(await hostAnswer<unknown>(callable), 7, 'a function with then is a thenable too')
  const notThenable = { then: 'not a function' }
  t.equal(hostAnswer<unknown>(notThenable), notThenable, 'an object whose then is no function is a plain answer')
  t.equal(await mapMaybePromise(hostAnswer(resolving(2)), (value) => value * 3), 6)
})

t.test('a host isRevoked answering with a thenable: resolving true refuses the token, false lets it through', async (t) => {
  let revoked = true
  const app = await build(t, {}, { isRevoked: () => resolving(revoked) })
  const token = tokenFor(app)
  const refused = await app.inject({ url: '/profile', headers: bearer(token) })
  t.equal(refused.statusCode, 401)
  t.equal(refused.headers['www-authenticate'], 'Bearer error="invalid_token"')
  revoked = false
  const admitted = await app.inject({ url: '/profile', headers: bearer(token) })
  t.strictSame([admitted.statusCode, admitted.json()], [200, { userId: 1, username: 'john' }])
})

t.test('a host validateToken answering with a thenable: undefined refuses the token, an identity is used', async (t) => {
  // What the host's directory answers; nothing at first.
  const directory: { identity?: { userId: number, username: string } } = {}
  const app = await build(t, {}, { validateToken: () => resolving(directory.identity) })
  const token = tokenFor(app)
  const refused = await app.inject({ url: '/profile', headers: bearer(token) })
  t.strictSame([refused.statusCode, refused.json().code], [401, 'AUTH_ERR_INVALID_TOKEN'], 'never the thenable taken for an identity')
  directory.identity = { userId: 9, username: 'host-user' }
  const admitted = await app.inject({ url: '/profile', headers: bearer(token) })
  t.strictSame([admitted.statusCode, admitted.json()], [200, { userId: 9, username: 'host-user' }])
})

t.test('a host thenable that rejects fails the request (500), never admits it', async (t) => {
  // Not `build`: its OpenAPI check would refuse the 500, which the document leaves out as the host's failure.
  const app = Fastify()
  await app.register(serviceApp, { config: testConfig, validateToken: () => new Thenable<undefined>({ reason: new Error('directory down') }) })
  t.teardown(() => app.close())
  const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'john', password: 'changeme' } })
  const res = await app.inject({ url: '/profile', headers: bearer(login.json().access_token) })
  t.strictSame([res.statusCode, res.json().code], [500, 'HTTP_ERR_INTERNAL'])
})

t.test('the guard on a host\'s own routes treats a thenable alike', async (t) => {
  const host = Fastify()
  const service = catsService({ config: testConfig, isRevoked: (claims) => resolving(claims.username === 'maria') })
  await host.register(service.plugin, { prefix: '/api' })
  host.get('/reports', { onRequest: service.guard }, async (request) => service.identity(request))
  t.teardown(() => host.close())
  const tokenOf = async (username: string, password: string): Promise<string> =>
    (await host.inject({ method: 'POST', url: '/api/auth/login', payload: { username, password } })).json().access_token
  const chris = await host.inject({ url: '/reports', headers: bearer(await tokenOf('chris', 'secret')) })
  t.strictSame([chris.statusCode, chris.json()], [200, { userId: 2, username: 'chris' }])
  const maria = await host.inject({ url: '/reports', headers: bearer(await tokenOf('maria', 'guess')) })
  t.equal(maria.statusCode, 401, 'revoked by the host\'s thenable')
})
