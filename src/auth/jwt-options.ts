import type { FastifyJWTOptions } from '@fastify/jwt'
import { durationToSeconds, type Config } from '../config.js'

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
