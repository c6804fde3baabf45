import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { memoryGuard } from '../../src/cats/cat-writes.js'
import { idempotentCreate } from '../../src/cats/idempotent-create.js'
import { routeAccess } from '../../src/cats/route-access.js'
import { CatReply, CreateCatBody, CreateCatHeaders, JSON_CONTENT_TYPE, JsonText } from '../../src/cats/schemas.js'
import {
  badRequest, bodyTooLarge, idempotencyKeyInUse, idempotencyKeyReused, insufficientStorage, storeUnavailable, unsupportedMediaType
} from '../../src/http/error-response-schemas.js'
import { ref } from '../../src/http/schemas.js'
import { mapMaybePromise } from '../../src/maybe-promise.js'
import { serviceDecorator } from '../../src/service-scope.js'

/** POST /cats: a new cat; with an Idempotency-Key, a repeat of the same create gets the first answer again. */
// Named `cats` in every file here: a trace names a handler's span after its plugin (`handler - cats`).
const cats: FastifyPluginAsyncTypebox = async (fastify) => {
  const catsStore = serviceDecorator(fastify, 'catsStore')
  const access = routeAccess(fastify)
  const assertMemoryForWrites = memoryGuard(fastify)
  fastify.post('', {
    ...access.authHook,
    schema: {
      tags: ['cats'],
      operationId: 'createCat',
      summary: 'Create a cat',
      ...access.security,
      headers: CreateCatHeaders,
      body: ref(CreateCatBody),
      response: {
        201: JsonText(ref(CatReply, { description: 'The cat as created, with its new id (or, for a repeated Idempotency-Key, the first answer replayed)' })),
        400: badRequest('The body is not JSON, a field is missing or of the wrong type, or the Idempotency-Key is malformed', 'body.age', 'must be integer'),
        ...access.authErrors,
        409: idempotencyKeyInUse,
        413: bodyTooLarge,
        415: unsupportedMediaType,
        422: idempotencyKeyReused,
        503: storeUnavailable,
        507: insufficientStorage
      }
    }
  }, (request, reply) => {
    assertMemoryForWrites()
    const key = request.headers['idempotency-key']
    // The store's JSON text of the cat has exactly the reply's fields in its order, so it is sent as it is.
    reply.code(201).type(JSON_CONTENT_TYPE)
    if (key === undefined) return catsStore.createJson(request.body)
    const result = catsStore.createOnce(request.body, idempotentCreate(request, request.body, key, access.tokenRequired))
    return mapMaybePromise(result, ({ json, replayed }) => {
      if (replayed) reply.header('idempotent-replayed', 'true')
      return json
    })
  })
}

export default cats
