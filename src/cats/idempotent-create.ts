import { createHash } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { verifiedOf } from '../auth/tokens/token-guard.js'
import { userKey } from '../auth/user-key.js'
import { addressOf, clientAddress } from '../http/client-address.js'
import type { IdempotentRequest } from './cats-store.js'
import type { CreateCatBody } from './schemas.js'

/**
 * A create sent with an Idempotency-Key, as the store keeps it: per user when creates need a token (`tokenRequired`),
 * so one user's key never answers another's request; a hash of the cat, not the body, so a repeat is recognised
 * without keeping what it sent; and the client the kept keys are counted against: the user, or the address as every
 * limit per client counts it.
 */
export function idempotentCreate (request: FastifyRequest, { name, age, breed }: CreateCatBody, key: string, tokenRequired: boolean): IdempotentRequest {
  const user = tokenRequired ? userKey(verifiedOf(request).identity.userId) : undefined
  return {
    scope: user ?? '',
    key,
    fingerprint: createHash('sha256').update(JSON.stringify([name, age, breed])).digest('base64url'),
    client: user ?? clientAddress(addressOf(request))
  }
}
