import type { FastifyRequest } from 'fastify'
import { PreconditionRequired } from '../errors.js'
import { ifMatchVersions, ifNoneMatchVersions } from '../http/entity-tags.js'
import { preconditionFailed, preconditionRequired } from '../http/error-response-schemas.js'
import type { VersionCondition } from './cats-store.js'

/** A request's preconditions: If-Match and If-None-Match (RFC 9110 §13.1). */
export const conditionOf = (request: FastifyRequest): VersionCondition => ({
  match: ifMatchVersions(request.headers['if-match']),
  noneMatch: ifNoneMatchVersions(request.headers['if-none-match'])
})

/**
 * The preconditions of a write, undefined when it has none; with CATS_IF_MATCH=required (`ifMatchRequired`), a write
 * without If-Match is refused with 428.
 */
export function writeConditionOf (request: FastifyRequest, ifMatchRequired: boolean): VersionCondition | undefined {
  const condition = conditionOf(request)
  if (condition.match === undefined && ifMatchRequired) throw new PreconditionRequired()
  return condition.match === undefined && condition.noneMatch === undefined ? undefined : condition
}

/** The precondition errors a write documents. */
export const preconditionErrors = (ifMatchRequired: boolean) => ({ 412: preconditionFailed, ...(ifMatchRequired ? { 428: preconditionRequired } : {}) })
