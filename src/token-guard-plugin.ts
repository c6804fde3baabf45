import fp from 'fastify-plugin'
import type { FastifyPluginAsync } from 'fastify'
import { loadConfig, durationToSeconds } from './config.js'
import { verifyOptions } from './auth/jwt-options.js'
import { keyedVerify, verifyingKeys } from './auth/token-keys.js'
import { openUsers } from './auth/open-users.js'
import { userStillExists } from './auth/token-claims.js'
import { tokenGuard } from './auth/token-guard.js'
import type { AppOptions } from './app-options.js'
// The types a host needs with the guard: `fastify.authenticate`, `request.user` and `request.tokenClaims`.
export type {} from './auth/token-guard.js'
export type {} from './auth/jwt-options.js'

export type { AppOptions as TokenGuardOptions } from './app-options.js'
export type { Identity } from './auth/schemas.js'

/**
 * The service's token guard for a host's own routes (the package's `./token-guard` entry). Registered in a scope
 * of the host, with the same `config` (keys, issuer, audience, lifetime) and `users` as the service, it
 * decorates that scope, and only it, with `authenticate`: an onRequest hook that accepts the service's tokens,
 * sets `request.user`, or answers 401. The verifier and user store it needs stay in a scope of their own.
 */
const tokenGuardPlugin: FastifyPluginAsync<AppOptions> = async (fastify, opts) => {
  const config = loadConfig(opts.config)
  const keys = verifyingKeys(config)
  await fastify.register(async (guardScope) => {
    guardScope.decorateRequest('tokenClaims', null)
    const { users, close } = openUsers(config, { users: opts.users, log: guardScope.log })
    guardScope.addHook('onClose', close)
    fastify.decorate('authenticate', tokenGuard({
      verify: keyedVerify(keys, config.JWT_SECRET, verifyOptions(config)),
      lifetimeSeconds: durationToSeconds(config.JWT_EXPIRES_IN),
      validateToken: opts.validateToken ?? userStillExists(users),
      isRevoked: opts.isRevoked,
      denylist: () => undefined
    }))
  })
}

export default fp(tokenGuardPlugin, { name: 'cats-token-guard', fastify: '5.x' })
