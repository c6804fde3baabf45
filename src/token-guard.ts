import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import config from '../plugins/config.js'
import metrics from '../plugins/metrics.js'
import jwt from '../plugins/jwt.js'
import users from '../plugins/users.js'
import authenticate from '../plugins/authenticate.js'
import type { AppOptions } from './app-options.js'
// The types a host needs with the guard: `fastify.authenticate` and `request.user`.
export type {} from '../plugins/authenticate.js'
export type {} from '../plugins/jwt.js'

export type { AppOptions as TokenGuardOptions } from './app-options.js'
export type { Identity } from './auth/schemas.js'

/**
 * The service's token guard for a host's own routes. Registered in a scope of the
 * host, with the same `config` (secret, issuer, audience, lifetime) and `users` as the
 * service, it decorates that scope, and only it, with `authenticate`: an onRequest
 * hook that accepts the service's tokens, sets `request.user`, or answers 401.
 * The settings, signer and user store it needs stay in a scope of their own.
 */
const tokenGuard: FastifyPluginAsync<AppOptions> = async (fastify, opts) => {
  const options: AppOptions = { config: opts.config, users: opts.users, validateToken: opts.validateToken, isRevoked: opts.isRevoked }
  await fastify.register(async (guardScope) => {
    await guardScope.register(config, options)
    // No registry is passed: the guard measures nothing of its own.
    await guardScope.register(metrics, options)
    await guardScope.register(jwt, options)
    await guardScope.register(users, options)
    await guardScope.register(authenticate, options)
    fastify.decorate('authenticate', guardScope.authenticate)
  })
}

export default fp(tokenGuard, { name: 'cats-token-guard', fastify: '5.x' })
