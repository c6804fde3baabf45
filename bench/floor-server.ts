import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { Registry } from 'prom-client'
import { responseHeadersHook } from '../src/http/security-headers.js'
import { CatIdParams, CatReply, CreateCatBody, JSON_CONTENT_TYPE, UpdateCatBody } from '../src/cats/schemas.js'
import { MemoryCatsStore } from '../src/cats/memory-cats-store.js'
import { findMergeProblems } from '../src/cats/merge-safety.js'
import { Identity, VerifiedClaims } from '../src/auth/schemas.js'
import { DEMO_USERS } from '../src/auth/demo-users.js'
import { hasAllowedAge } from '../src/auth/token-claims.js'
import { MemoryRevocationStore } from '../src/auth/revocation-store.js'
import { errorBody } from '../src/http/error-body.js'
import { ServiceMetrics } from '../src/metrics/service-metrics.js'
import { bearerToken } from '../src/auth/bearer-token.js'
import { jwtOptions } from '../src/auth/jwt-options.js'
import { durationToSeconds, type Config } from '../src/config.js'
import { connectionSettings, serverOptions } from '../src/http/server-options.js'
import { drainingShutdown } from '../src/http/graceful-shutdown.js'
import { useValidation } from '../src/http/validator-compiler.js'
import { sharedSchemas } from '../src/http/shared-schemas.js'
import configPlugin from '../plugins/config.js'
import underPressurePlugin from '../plugins/under-pressure.js'
import { InvalidToken } from '../src/http/errors.js'

export interface FloorOptions {
  /** Cats 1..n to serve. */
  cats: number
  /** The service's settings: the tokens GET /profile accepts, and the server's timeouts and header limit. */
  config: Config
  /** Send the service's security headers and a request id (a UUID) on every response. */
  headers: boolean
  /** Observe each request's duration in a prom-client histogram by method, route and status, in an onResponse hook. */
  metrics?: boolean
  /**
   * Add the production features the service gets from Fastify and its plugins, each as the service sets it up:
   * the server options (its lazy pino logger, request-id rule, client-error handler), the load shedding of
   * @fastify/under-pressure with its limits, the draining shutdown's hook, and Ajv validation of the cat id and
   * the update's body through its validator compiler.
   */
  features?: boolean
}

const claimsCheck = TypeCompiler.Compile(VerifiedClaims)
const INVALID_TOKEN_BODY = errorBody(new InvalidToken())

/**
 * The floor under the service's cost on GET /profile, GET /cats/:id, POST /cats and PUT /cats/:id:
 * the least a Fastify app can do for them — these routes, no logger, no other hooks; for
 * the profile, @fastify/jwt's verify and the service's checks of the claims (shape, age,
 * denylist, user) in a callback onRequest hook, and the identity through its reply
 * schema; a sync handler returning the cat's JSON text for the read; for the create
 * the service's body and reply schemas (Ajv and fast-json-stringify, as any
 * validated Fastify route has); for the update, Fastify's JSON body and the merge
 * the baseline does too (the service's merge-safety walk and its memory store's
 * merge). The cats live in the service's memory store. With `headers`, it adds only what
 * the service sends on every response. It tells how much of the
 * project/baseline ratio is Fastify itself and those headers, not the
 * service's own code. With `metrics`, it adds what the service does per request with metrics on;
 * with `features`, the service's production features that Fastify and its plugins provide, so that
 * what remains between it and the service is the service's own code.
 */
export function createFloorServer (options: FloorOptions): FastifyInstance {
  const { config } = options
  const features = options.features === true
  // With the features, the standalone server's options (its logger among them); else only the service's
  // timeouts and header limit, as the baseline has them.
  const app = features
    ? Fastify(serverOptions(config))
    : Fastify({ ...connectionSettings(config), logger: false, genReqId: options.headers ? () => randomUUID() : undefined })
  if (features) {
    useValidation(app, sharedSchemas)
    drainingShutdown(app, config.SHUTDOWN_TIMEOUT_MS)
    app.register(configPlugin, { config })
    app.register(underPressurePlugin)
  }
  // The cat id and the update's body, validated as the service's routes declare them.
  const catIdSchema = features ? { schema: { params: CatIdParams } } : {}
  const updateSchema = features ? { schema: { params: CatIdParams, body: UpdateCatBody } } : {}
  const cats = new MemoryCatsStore()
  for (let id = 1; id <= options.cats; id++) cats.create({ name: 'Tom', age: 3, breed: 'x' })
  // The hook the service registers (plugins/response-headers.ts).
  if (options.headers) app.addHook('onRequest', responseHeadersHook())
  if (options.metrics === true) {
    // The service's own hook and histogram.
    app.addHook('onResponse', new ServiceMetrics(new Registry(), { countCats: () => cats.size }).observeResponse)
  }
  const usernames = new Map<unknown, string>(DEMO_USERS.map((user) => [user.id, user.username]))
  const revocations = new MemoryRevocationStore()
  const lifetimeSeconds = durationToSeconds(config.JWT_EXPIRES_IN)
  app.register(fastifyJwt, jwtOptions(config))
  const refuse = (reply: FastifyReply): void => {
    reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').send(INVALID_TOKEN_BODY)
  }
  app.get('/profile', {
    schema: { response: { 200: Identity } },
    onRequest: (request, reply, done) => {
      const token = bearerToken(request.headers.authorization)
      let claims: unknown
      try {
        claims = token === undefined ? undefined : app.jwt.verify(token)
      } catch {
        refuse(reply)
        return
      }
      if (!claimsCheck.Check(claims) || !hasAllowedAge(claims, lifetimeSeconds, Math.floor(Date.now() / 1000)) ||
        revocations.isRevoked(claims.jti, claims.sid) || usernames.get(claims.sub) !== claims.username) {
        refuse(reply)
        return
      }
      request.user = { userId: claims.sub, username: claims.username }
      done()
    }
  }, (request) => request.user)
  app.get<{ Params: { id: string } }>('/cats/:id', catIdSchema, (request, reply) => {
    const json = cats.findJson(Number(request.params.id))
    if (json === undefined) return ''
    reply.type(JSON_CONTENT_TYPE)
    return json
  })
  app.post<{ Body: CreateCatBody }>('/cats', { schema: { body: CreateCatBody, response: { 201: CatReply } } }, (request, reply) => {
    reply.code(201)
    return cats.create(request.body)
  })
  app.put<{ Params: { id: string }, Body: UpdateCatBody }>('/cats/:id', updateSchema, (request, reply) => {
    if (findMergeProblems(request.body).length > 0) {
      reply.code(400)
      return { statusCode: 400, error: 'Bad Request', message: 'body is not safe to merge' }
    }
    const json = cats.updateJson(Number(request.params.id), request.body)
    if (json === undefined) return ''
    reply.type(JSON_CONTENT_TYPE)
    return json
  })
  return app
}
