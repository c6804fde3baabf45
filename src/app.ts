import { join } from 'node:path'
import AutoLoad from '@fastify/autoload'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { AppOptions, MetricsRegistry } from './app-options.js'
import { useValidation } from './http/validator-compiler.js'
import { serializersOnFirstUse } from './http/serializer-compiler.js'
import { errorHandler, notFoundHandlerFor } from './http/error-handler.js'
import { RouteMethods } from './http/route-methods.js'
import { ErrorReply, ProblemDetails, ValidationIssue } from './http/error-schemas.js'
import { CatReply, CreateCatBody, DeleteReply, StoredCat } from './cats/schemas.js'
import { Identity, LoginBody, LoginReply } from './auth/schemas.js'
import { loadConfig } from './config.js'
import { tokenKeys } from './auth/tokens/token-keys.js'
import { verifiedOf, type TokenGuard } from './auth/tokens/token-guard.js'
import type { Identity as IdentityType } from './auth/schemas.js'
import { decorateService, serviceDecorator } from './service-scope.js'

export type { AppOptions, MetricsRegistry }
export type { IdentityType as Identity }
export type { UserDirectory } from './auth/login/users.js'
export type { UserRecord } from './auth/login/users-file.js'
export type { ConfigInput } from './config.js'
// What a host passes to its own @fastify/swagger for the service's operations (see docs/embedding.md).
export { openapiRefResolver, openapiSecuritySchemes } from './http/host-openapi.js'
export type { BuildLocalReference, ReferencedSchema } from './http/host-openapi.js'

const root = join(import.meta.dirname, '..')

/**
 * The schemas routes reference by `$id`: registered once with `fastify.addSchema` (for serializers and the
 * OpenAPI components) and added to the validators.
 */
const componentSchemas = [ValidationIssue, ErrorReply, ProblemDetails, CreateCatBody, CatReply, StoredCat, DeleteReply, LoginBody, LoginReply, Identity]

/**
 * The whole service as one encapsulated Fastify plugin. A host app registers
 * it, usually under a prefix; its validator, error handling and hooks stay inside.
 */
const app: FastifyPluginAsync<AppOptions> = async (fastify, opts) => {
  // Fastify's own serializers, each compiled when its first reply is sent.
  fastify.setSchemaController({ compilersFactory: { buildSerializer: serializersOnFirstUse(SerializerSelector()) } })
  useValidation(fastify, componentSchemas)
  fastify.setErrorHandler(errorHandler)
  // The methods of each of the service's paths, as its routes are registered below: a known path with another method is a 405.
  const routeMethods = new RouteMethods()
  fastify.addHook('onRoute', routeMethods.add)
  fastify.setNotFoundHandler(notFoundHandlerFor(routeMethods))
  // The service takes JSON only (PATCH takes merge patches, in a scope of its own): the parsers it inherits from the
  // host (text, multipart, forms, a catch-all) go, so any other media type is a 415 whatever the host registered.
  // JSON is parsed as the host's server options say (__proto__ and constructor.prototype keys).
  const { onProtoPoisoning = 'error', onConstructorPoisoning = 'error' } = fastify.initialConfig
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, fastify.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning))

  const config = loadConfig(opts.config)
  decorateService(fastify, 'catsConfig', config)
  decorateService(fastify, 'catsTokenKeys', tokenKeys(config))
  // Not `opts` itself: it carries the host's `prefix`, which autoload would apply twice.
  const options: AppOptions = { config: opts.config, users: opts.users, validateToken: opts.validateToken, isRevoked: opts.isRevoked, metrics: opts.metrics, hideFromHostDocument: opts.hideFromHostDocument }
  // Third-party plugins first (the service's own depend on them), as fastify/demo lays them out.
  await fastify.register(AutoLoad, { dir: join(root, 'plugins', 'external'), options })
  await fastify.register(AutoLoad, { dir: join(root, 'plugins', 'app'), options })

  // These routes take small JSON bodies: a tighter limit than Fastify's 1 MiB default.
  const bodyLimit = config.BODY_LIMIT
  fastify.addHook('onRoute', (route) => {
    route.bodyLimit ??= bodyLimit
  })
  await fastify.register(AutoLoad, { dir: join(root, 'routes'), options })
}

export default app

/** The service and its token guard for the host's own routes, sharing one key set, session store, denylist and accounts. */
export interface CatsService {
  /** The service: register it once, under a prefix (`host.register(service.plugin, { prefix: '/api/cats-service' })`). */
  plugin: FastifyPluginAsync
  /**
   * The service's token guard as an onRequest hook for the host's routes: it refuses every token the service refuses
   * (logged out, ended sessions, reused refresh tokens, deleted users) and answers 401 as the service does.
   */
  guard: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>
  /** The user of a request the guard accepted; throws on a request it has not. */
  identity: (request: FastifyRequest) => IdentityType
}

/**
 * The service with a guard for the host's own routes. A plugin registered under a prefix cannot decorate its
 * host without giving up that prefix, so the guard comes from here, bound to the one registration of `plugin`.
 */
export function catsService (options: AppOptions): CatsService {
  let authenticate: TokenGuard | undefined
  const plugin: FastifyPluginAsync = async (fastify) => {
    if (authenticate !== undefined) throw new Error('cats-auth-service: this service is registered already; call catsService() once per registration')
    // In this plugin's own scope, so the host's prefix applies and nothing reaches the host.
    await app(fastify, options)
    authenticate = serviceDecorator(fastify, 'catsAuthenticate')
  }
  return {
    plugin,
    guard: async (request, reply) => {
      if (authenticate === undefined) {
        throw new Error('cats-auth-service: the guard was used before the service was ready; register service.plugin and await ready() first')
      }
      return await authenticate(request, reply)
    },
    identity: (request) => verifiedOf(request).identity
  }
}
