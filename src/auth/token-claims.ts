import type { FastifyRequest } from 'fastify'
import type { Identity, TokenClaims } from './schemas.js'
import type { UserStore } from './users.js'

/**
 * The validation step of the guard: receives verified claims and returns the
 * request's identity, or undefined to refuse the token (401).
 */
export type ValidateToken = (claims: TokenClaims, request: FastifyRequest) => Identity | undefined | Promise<Identity | undefined>

/**
 * The default validation step: the user must still exist under the same name in the
 * given store (the guard's own, not the request's server: a host's scope has none).
 */
export function validateTokenUser (users: Pick<UserStore, 'findById'>): ValidateToken {
  return (claims) => {
    const user = users.findById(claims.sub)
    if (user === undefined || user.username !== claims.username) return undefined
    return { userId: user.id, username: user.username }
  }
}
