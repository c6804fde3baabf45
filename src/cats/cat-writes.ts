import { getHeapStatistics } from 'node:v8'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LowMemory } from '../errors.js'
import { catTooLarge, insufficientStorage, storeUnavailable, unsupportedMediaType } from '../http/error-response-schemas.js'
import { invalidRequest, type FieldError } from '../http/validation-issues.js'
import { mapMaybePromise, type MaybePromise } from '../maybe-promise.js'
import { serviceDecorator } from '../service-scope.js'
import { catOrEmptyBody } from './cat-replies.js'
import type { VersionCondition, VersionedCat } from './cats-store.js'
import { writesAllowed } from './low-memory.js'
import { preconditionErrors, writeConditionOf } from './preconditions.js'
import type { routeAccess } from './route-access.js'

/** The heap guard of every write (creates, PUT, PATCH): 507 while the heap is above WRITE_HEAP_RATIO of its limit. */
export function memoryGuard (fastify: FastifyInstance): () => void {
  // heapUsed is under-pressure's once-a-second sample, so the check costs nothing per request.
  const canWrite = writesAllowed(getHeapStatistics().heap_size_limit, serviceDecorator(fastify, 'catsConfig').WRITE_HEAP_RATIO,
    () => fastify.memoryUsage().heapUsed)
  return () => {
    if (!canWrite()) throw new LowMemory()
  }
}

/**
 * What PUT and PATCH share: the errors they document, and the steps around the store's write (preconditions, then
 * the body's problems, then memory), whose answer is the cat as stored, serialized once.
 */
export function catWrites (fastify: FastifyInstance, { authErrors }: ReturnType<typeof routeAccess>) {
  const ifMatchRequired = serviceDecorator(fastify, 'catsConfig').CATS_IF_MATCH === 'required'
  const assertMemoryForWrites = memoryGuard(fastify)
  const writeCat = (request: FastifyRequest, reply: FastifyReply, findProblems: () => FieldError[],
    write: (condition: VersionCondition | undefined) => MaybePromise<VersionedCat | undefined>): MaybePromise<string> => {
    const condition = writeConditionOf(request, ifMatchRequired)
    const problems = findProblems()
    if (problems.length > 0) throw invalidRequest('body', problems)
    assertMemoryForWrites()
    return mapMaybePromise(write(condition), (cat) => catOrEmptyBody(reply, cat))
  }
  const conditionErrors = preconditionErrors(ifMatchRequired)
  const writeErrors = { ...authErrors, ...conditionErrors, 413: catTooLarge, 415: unsupportedMediaType, 503: storeUnavailable, 507: insufficientStorage }
  return { ifMatchRequired, writeCat, conditionErrors, writeErrors }
}
