import { join } from 'node:path'
import AutoLoad from '@fastify/autoload'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyPluginAsync } from 'fastify'
import type { AppOptions, MetricsRegistry } from './app-options.js'
import { useValidation } from './http/validator-compiler.js'
import { serializersOnFirstUse } from './http/serializer-compiler.js'
import { errorHandler, notFoundHandler } from './http/error-handler.js'
import { ErrorReply, ProblemDetails, ValidationIssue } from './http/schemas.js'
import { CatReply, CreateCatBody, DeleteReply, StoredCat } from './cats/schemas.js'
import { Identity, LoginBody, LoginReply } from './auth/schemas.js'
import { loadConfig } from './config.js'
import { tokenKeys } from './auth/token-keys.js'

export type { AppOptions, MetricsRegistry }
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
  fastify.setNotFoundHandler(notFoundHandler)
  // Without a text parser, a text/plain body is a 415 instead of reaching validation.
  fastify.removeContentTypeParser('text/plain')

  fastify.decorate('config', loadConfig(opts.config))
  fastify.decorate('tokenKeys', tokenKeys(fastify.config))
  // Not `opts` itself: it carries the host's `prefix`, which autoload would apply twice.
  const options: AppOptions = { config: opts.config, users: opts.users, validateToken: opts.validateToken, isRevoked: opts.isRevoked, metrics: opts.metrics, hideFromHostDocument: opts.hideFromHostDocument }
  // Third-party plugins first (the service's own depend on them), as fastify/demo lays them out.
  await fastify.register(AutoLoad, { dir: join(root, 'plugins', 'external'), options })
  await fastify.register(AutoLoad, { dir: join(root, 'plugins', 'app'), options })

  // These routes take small JSON bodies: a tighter limit than Fastify's 1 MiB default.
  const bodyLimit = fastify.config.BODY_LIMIT
  fastify.addHook('onRoute', (route) => {
    route.bodyLimit ??= bodyLimit
  })
  await fastify.register(AutoLoad, { dir: join(root, 'routes'), options })
}

export default app
