import type { FastifyJWTOptions } from '@fastify/jwt'
import { durationToSeconds, type Config } from '../config.js'
import type { Identity, TokenClaims } from './schemas.js'

// @fastify/jwt's own declarations (request.user, fastify.jwt) kept in this module's compiled types, with the
// service's claims and identity, for the service and for a host using the package's token guard.
export type {} from '@fastify/jwt'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: Identity
  }
}

/** @fastify/jwt's settings for the configured secret: HS256 only, the configured lifetime, issuer and audience. */
export function jwtOptions ({ JWT_SECRET, JWT_EXPIRES_IN, JWT_ISSUER, JWT_AUDIENCE }: Config): FastifyJWTOptions {
  return {
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
  }
}
