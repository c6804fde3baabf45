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

/**
 * What the writes of cats share: the heap guard (creates, PUT, PATCH), and for PUT and PATCH the errors they document
 * and the steps around the store's write (preconditions, then the body's problems, then memory), whose answer is the
 * cat as stored, serialized once.
 */
export function catWrites (fastify: FastifyInstance, { authErrors }: ReturnType<typeof routeAccess>) {
  const { CATS_IF_MATCH, WRITE_HEAP_RATIO } = serviceDecorator(fastify, 'catsConfig')
  const ifMatchRequired = CATS_IF_MATCH === 'required'
  // heapUsed is under-pressure's once-a-second sample, so the check costs nothing per request.
  const canWrite = writesAllowed(getHeapStatistics().heap_size_limit, WRITE_HEAP_RATIO, () => fastify.memoryUsage().heapUsed)
  const assertMemoryForWrites = (): void => {
    if (!canWrite()) throw new LowMemory()
  }
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
  return { ifMatchRequired, assertMemoryForWrites, writeCat, conditionErrors, writeErrors }
}
