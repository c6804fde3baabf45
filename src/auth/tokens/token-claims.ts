import type { FastifyRequest } from 'fastify'
import type { Identity, TokenClaims, VerifiedClaims } from '../schemas.js'
import type { Accounts } from '../login/users.js'
import { mapMaybePromise } from '../../maybe-promise.js'

/**
 * The validation step of the guard: receives verified claims and returns the
 * request's identity, or undefined to refuse the token (401); or a promise or any
 * other thenable of either.
 */
export type ValidateToken = (claims: TokenClaims, request: FastifyRequest) => Identity | undefined | PromiseLike<Identity | undefined>

/**
 * A host's own revocation check, consulted by the guard after the service's
 * denylist: true refuses the token (401); or a promise or any other thenable of it.
 */
export type IsRevoked = (claims: VerifiedClaims, request: FastifyRequest) => boolean | PromiseLike<boolean>

/** How far ahead of this server's clock a token's issue time may be (clock skew between instances). */
export const MAX_ISSUED_AHEAD_SECONDS = 60

/** The times every verified token carries. */
export interface TokenTimes {
  iat: number
  exp: number
}

/**
 * A token may live no longer than the configured lifetime and may not claim to
 * be issued in the future (beyond clock skew): a token minted elsewhere with
 * the same secret cannot grant itself a longer life.
 */
export function hasAllowedAge ({ iat, exp }: TokenTimes, lifetimeSeconds: number, nowSeconds: number): boolean {
  return exp - iat <= lifetimeSeconds && iat <= nowSeconds + MAX_ISSUED_AHEAD_SECONDS
}

/**
 * The default validation step: the user must still exist under the same name in the
 * given store (the guard's own, not the request's server: a host's scope has none).
 */
export function userStillExists (users: Pick<Accounts, 'findById'>): ValidateToken {
  return (claims) => mapMaybePromise(users.findById(claims.sub), (user) =>
    user === undefined || user.username !== claims.username ? undefined : { userId: user.id, username: user.username })
}
