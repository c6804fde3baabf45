import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { catIdOf } from '../../src/cats/cat-replies.js'
import { catWrites } from '../../src/cats/cat-writes.js'
import { findPatchProblems } from '../../src/cats/merge-patch.js'
import { routeAccess } from '../../src/cats/route-access.js'
import { CatIdParams, CatMergePatch, ConditionHeaders, JsonText, MERGE_PATCH_CONTENT_TYPE, StoredCat, catOrEmptyResponse } from '../../src/cats/schemas.js'
import { badRequest } from '../../src/http/error-response-schemas.js'
import { ref } from '../../src/http/schemas.js'
import { serviceDecorator } from '../../src/service-scope.js'

/**
 * PATCH /cats/:id: a JSON merge patch (RFC 7396). This file is a scope of its own, whose one body parser is for merge
 * patches, so any other media type gets 415 (and the other cats routes never take this one).
 */
// Named `cats` in every file here: a trace names a handler's span after its plugin (`handler - cats`).
const cats: FastifyPluginAsyncTypebox = async (fastify) => {
  const catsStore = serviceDecorator(fastify, 'catsStore')
  const access = routeAccess(fastify)
  const { writeCat, writeErrors } = catWrites(fastify, access)
  fastify.removeAllContentTypeParsers()
  // Fastify's JSON parser as it parses by default: a __proto__ or constructor.prototype key is an error.
  fastify.addContentTypeParser(MERGE_PATCH_CONTENT_TYPE, { parseAs: 'string' }, fastify.getDefaultJsonParser('error', 'error'))
  // RFC 5789 §2.2: a 415 names the patch formats the resource takes.
  fastify.addHook('onError', async (_request, reply, error) => {
    if (error.statusCode === 415) reply.header('accept-patch', MERGE_PATCH_CONTENT_TYPE)
  })
  fastify.patch('/:id', {
    ...access.authHook,
    schema: {
      tags: ['cats'],
      operationId: 'patchCat',
      summary: 'Apply a JSON merge patch to a cat (an empty 200 when no cat has this id)',
      ...access.security,
      consumes: [MERGE_PATCH_CONTENT_TYPE],
      params: CatIdParams,
      headers: ConditionHeaders,
      body: CatMergePatch,
      response: {
        200: catOrEmptyResponse('The whole cat after the patch, or an empty text/plain body when no cat has this id', JsonText(ref(StoredCat))),
        400: badRequest('The id or the body is invalid: not a JSON object, null for name, age or breed, a reserved key such as __proto__, or nested too deep',
          'body.name', 'must not be null: a cat keeps its name, age and breed'),
        ...writeErrors
      }
    }
  }, (request, reply) => writeCat(request, reply, () => findPatchProblems(request.body),
    (condition) => catsStore.patch(catIdOf(request.params), request.body, condition)))
}

export default cats
