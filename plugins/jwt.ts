import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import { jwtOptions } from '../src/auth/jwt-options.js'
import type { Identity, TokenClaims } from '../src/auth/schemas.js'

// Keeps @fastify/jwt's own declarations (request.user, fastify.jwt) in this module's
// compiled types, which a host using the package's token guard reads.
export type {} from '@fastify/jwt'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: Identity
  }
}

/** Signs and verifies access tokens: HS256 only, with the configured lifetime. */
export default fp(async (fastify) => {
  await fastify.register(fastifyJwt, jwtOptions(fastify.config))
}, { name: 'jwt', dependencies: ['config'] })
