import type { FastifyJWTOptions } from '@fastify/jwt'
import type { VerifierOptions } from 'fast-jwt'
import { durationToSeconds, type Config } from '../config.js'
import type { Identity, TokenClaims } from './schemas.js'
import { publicPem, type TokenKeys } from './token-keys.js'

// @fastify/jwt's own declarations (request.user, fastify.jwt) kept in this module's compiled types, with the
// service's claims and identity, for the service and for a host using the package's token guard.
export type {} from '@fastify/jwt'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    user: Identity
  }
}

/** What every token must carry and, when configured, its issuer and audience: for fast-jwt's verifiers. */
export function verifyOptions ({ JWT_ISSUER, JWT_AUDIENCE }: Config): Omit<Partial<VerifierOptions>, 'key' | 'algorithms'> {
  return {
    requiredClaims: [
      'exp', 'iat', 'sub', 'username',
      ...(JWT_ISSUER !== undefined ? ['iss'] : []),
      ...(JWT_AUDIENCE !== undefined ? ['aud'] : [])
    ],
    ...(JWT_ISSUER !== undefined && { allowedIss: JWT_ISSUER }),
    ...(JWT_AUDIENCE !== undefined && { allowedAud: JWT_AUDIENCE })
  }
}

/**
 * @fastify/jwt's settings: it signs with the configured key (an asymmetric one names itself with `kid`), the
 * configured lifetime, issuer and audience. Tokens are verified by `keyedVerify` (src/auth/token-keys.ts).
 */
export function jwtOptions (config: Config, keys: TokenKeys): FastifyJWTOptions {
  const { JWT_EXPIRES_IN, JWT_ISSUER, JWT_AUDIENCE } = config
  const [signing] = keys.published
  return {
    secret: keys.kid === undefined ? keys.signingKey : { private: keys.signingKey, public: publicPem(signing) },
    sign: {
      algorithm: keys.algorithm,
      ...(keys.kid !== undefined && { kid: keys.kid }),
      expiresIn: durationToSeconds(JWT_EXPIRES_IN), // @fastify/jwt reads a number as seconds
      ...(JWT_ISSUER !== undefined && { iss: JWT_ISSUER }),
      ...(JWT_AUDIENCE !== undefined && { aud: JWT_AUDIENCE })
    },
    verify: { algorithms: [keys.algorithm], ...verifyOptions(config) }
  }
}
