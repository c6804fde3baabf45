import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { badIdResponse, catIdOf, catOrEmptyBody, notModifiedReply } from '../../src/cats/cat-replies.js'
import { catWrites } from '../../src/cats/cat-writes.js'
import { meetsCondition } from '../../src/cats/cats-store.js'
import { findMergeProblems } from '../../src/cats/merge-safety.js'
import { conditionOf, writeConditionOf } from '../../src/cats/preconditions.js'
import { routeAccess } from '../../src/cats/route-access.js'
import { CatIdParams, ConditionHeaders, DeleteReply, JsonText, StoredCat, UpdateCatBody, catOrEmptyResponse, notModified } from '../../src/cats/schemas.js'
import { PreconditionFailed } from '../../src/errors.js'
import { strongTag } from '../../src/http/entity-tags.js'
import { badRequest, preconditionFailed, storeUnavailable } from '../../src/http/error-response-schemas.js'
import { INTEGER_TEXT_PATTERN, ref } from '../../src/http/schemas.js'
import { mapMaybePromise } from '../../src/maybe-promise.js'
import { serviceDecorator } from '../../src/service-scope.js'

/** /cats/:id: read a cat (GET), merge fields into it (PUT), delete it (DELETE); PATCH is in patch.ts. */
// Named `cats` in every file here: a trace names a handler's span after its plugin (`handler - cats`).
const cats: FastifyPluginAsyncTypebox = async (fastify) => {
  const catsStore = serviceDecorator(fastify, 'catsStore')
  const access = routeAccess(fastify)
  const { ifMatchRequired, writeCat, conditionErrors, writeErrors } = catWrites(fastify, access)

  fastify.get('/:id', {
    ...access.authHook,
    schema: {
      tags: ['cats'],
      operationId: 'getCat',
      summary: 'Read one cat (an empty 200 when no cat has this id)',
      ...access.security,
      params: CatIdParams,
      headers: ConditionHeaders,
      response: {
        200: catOrEmptyResponse('The cat, or an empty text/plain body when no cat has this id', JsonText(ref(StoredCat))),
        304: notModified('The cat is unchanged since the ETag in If-None-Match'),
        400: badIdResponse,
        ...access.authErrors,
        412: preconditionFailed,
        503: storeUnavailable
      }
    }
  }, (request, reply) => mapMaybePromise(catsStore.find(catIdOf(request.params)), (cat) => {
    const { match, noneMatch } = conditionOf(request)
    if (!meetsCondition({ match }, cat?.version)) throw new PreconditionFailed()
    if (cat !== undefined && !meetsCondition({ noneMatch }, cat.version)) return notModifiedReply(reply, strongTag(cat.version))
    return catOrEmptyBody(reply, cat)
  }))

  fastify.put('/:id', {
    ...access.authHook,
    schema: {
      tags: ['cats'],
      operationId: 'updateCat',
      summary: 'Merge fields into a cat (an empty 200 when no cat has this id)',
      ...access.security,
      params: CatIdParams,
      headers: ConditionHeaders,
      body: UpdateCatBody,
      response: {
        200: catOrEmptyResponse('The whole cat after the merge, or an empty text/plain body when no cat has this id', JsonText(ref(StoredCat))),
        400: badRequest('The id or the body is invalid: not a JSON object, a reserved key such as __proto__, or nested too deep',
          'params.id', `must match pattern "${INTEGER_TEXT_PATTERN}"`),
        ...writeErrors
      }
    }
  }, (request, reply) => writeCat(request, reply, () => findMergeProblems(request.body),
    (condition) => catsStore.update(catIdOf(request.params), request.body, condition)))

  fastify.delete('/:id', {
    ...access.authHook,
    schema: {
      tags: ['cats'],
      operationId: 'deleteCat',
      summary: 'Delete the earliest created cat with this id',
      ...access.security,
      params: CatIdParams,
      headers: ConditionHeaders,
      response: {
        200: ref(DeleteReply, { description: 'Deleted, or there was no cat with this id (and no If-Match)' }),
        400: badIdResponse,
        ...access.authErrors,
        ...conditionErrors,
        503: storeUnavailable
      }
    }
  }, (request) => mapMaybePromise(catsStore.remove(catIdOf(request.params), writeConditionOf(request, ifMatchRequired)), () => ({ deleted: true as const })))
}

export default cats
