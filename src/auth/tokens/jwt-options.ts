import { createSigner, type VerifierOptions } from 'fast-jwt'
import type { Config } from '../../config.js'
import type { TokenClaims } from '../schemas.js'
import type { TokenKeys } from './token-keys.js'

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
 * Signs access tokens with the configured key (an asymmetric one names itself with `kid`), lifetime, issuer and
 * audience. fast-jwt directly, not @fastify/jwt: that plugin decorates `jwt` and request `user`, or, under a
 * `namespace`, adds itself to a host's existing `fastify.jwt`; the service must leave a host's decorators alone.
 * Tokens are verified by `keyedVerify` (src/auth/tokens/token-keys.ts).
 */
export function accessTokenSigner (config: Config, keys: TokenKeys): (claims: TokenClaims) => string {
  const { JWT_ISSUER, JWT_AUDIENCE, durations } = config
  return createSigner({
    key: keys.signingKey,
    algorithm: keys.algorithm,
    ...(keys.kid !== undefined && { kid: keys.kid }),
    expiresIn: durations.accessTokenSeconds * 1000, // fast-jwt reads a number as milliseconds
    ...(JWT_ISSUER !== undefined && { iss: JWT_ISSUER }),
    ...(JWT_AUDIENCE !== undefined && { aud: JWT_AUDIENCE })
  })
}
