import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import { durationToSeconds } from '../src/config.js'
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
  const { JWT_SECRET, JWT_EXPIRES_IN, JWT_ISSUER, JWT_AUDIENCE } = fastify.config
  await fastify.register(fastifyJwt, {
    secret: JWT_SECRET,
    sign: {
      algorithm: 'HS256',
      expiresIn: durationToSeconds(JWT_EXPIRES_IN), // @fastify/jwt reads a number as seconds
      ...(JWT_ISSUER !== undefined && { iss: JWT_ISSUER }),
      ...(JWT_AUDIENCE !== undefined && { aud: JWT_AUDIENCE })
    },
    verify: {
      algorithms: ['HS256'],
      requiredClaims: [
        'exp', 'iat', 'sub', 'username',
        ...(JWT_ISSUER !== undefined ? ['iss'] : []),
        ...(JWT_AUDIENCE !== undefined ? ['aud'] : [])
      ],
      ...(JWT_ISSUER !== undefined && { allowedIss: JWT_ISSUER }),
      ...(JWT_AUDIENCE !== undefined && { allowedAud: JWT_AUDIENCE })
    }
  })
}, { name: 'jwt', dependencies: ['config'] })
