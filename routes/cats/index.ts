import { createHash } from 'node:crypto'
import { getHeapStatistics } from 'node:v8'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import {
  CatIdParams, CatMergePatch, CatReply, CreateCatBody, CreateCatHeaders, DeleteReply, JSON_CONTENT_TYPE, JsonText, ListCatsQuery,
  MERGE_PATCH_CONTENT_TYPE, ListConditionHeaders, ConditionHeaders, StoredCat, StoredCatList, TEXT_CONTENT_TYPE, UpdateCatBody, catOrEmptyResponse, notModified
} from '../../src/cats/schemas.js'
import { meetsCondition, type VersionCondition, type VersionedCat } from '../../src/cats/cats-store.js'
import { LIST_CHUNK, Lists, decodeCursor, encodeCursor } from '../../src/cats/list-paging.js'
import { BEARER_SECURITY, INTEGER_TEXT_PATTERN, NO_SECURITY, ref } from '../../src/http/schemas.js'
import {
  badRequest, catTooLarge, bodyTooLarge, idempotencyKeyInUse, idempotencyKeyReused, insufficientStorage, listUnavailable, preconditionFailed,
  preconditionRequired, storeUnavailable, unauthorized, unsupportedMediaType
} from '../../src/http/error-response-schemas.js'
import { LowMemory, PreconditionFailed, PreconditionRequired, TooManyLists } from '../../src/errors.js'
import { ifMatchVersions, ifNoneMatchVersions, strongTag, weakTag } from '../../src/http/entity-tags.js'
import { findPatchProblems } from '../../src/cats/merge-patch.js'
import { invalidRequest } from '../../src/http/validation-issues.js'
import { writesAllowed } from '../../src/cats/low-memory.js'
import { findMergeProblems } from '../../src/cats/merge-safety.js'
import { addressOf, clientAddress } from '../../src/http/client-address.js'
import { mapMaybePromise, type MaybePromise } from '../../src/maybe-promise.js'
import type { FieldError } from '../../src/http/validation-issues.js'
import { serviceDecorator } from '../../src/service-scope.js'
import { userKey } from '../../src/auth/user-key.js'
import { verifiedOf } from '../../src/auth/tokens/token-guard.js'

const cats: FastifyPluginAsyncTypebox = async (fastify) => {
  const { CATS_AUTH, CATS_IF_MATCH, WRITE_HEAP_RATIO, LIST_STREAMS_MAX, LIST_WRITE_TIMEOUT_MS } = serviceDecorator(fastify, 'catsConfig')
  const catsStore = serviceDecorator(fastify, 'catsStore')
  // Public by default; CATS_AUTH=required puts the token guard on every route here.
  const tokenRequired = CATS_AUTH === 'required'
  const authHook = tokenRequired ? { onRequest: serviceDecorator(fastify, 'catsAuthenticate') } : {}
  const security = { security: tokenRequired ? BEARER_SECURITY : NO_SECURITY }
  const authErrors = tokenRequired ? { 401: unauthorized } : {}
  const badId = badRequest('The id is not an integer in decimal digits', 'params.id', `must match pattern "${INTEGER_TEXT_PATTERN}"`)
  const catId = (params: CatIdParams): number => Number(params.id)
  // A cat's JSON text as the store keeps it, with its ETag; when no cat has the id, an empty 200, as text/plain so
  // that no client parses it as a cat.
  const catOrEmpty = (reply: FastifyReply, cat: VersionedCat | undefined): string => {
    if (cat === undefined) {
      reply.type(TEXT_CONTENT_TYPE)
      return ''
    }
    reply.type(JSON_CONTENT_TYPE).header('etag', strongTag(cat.version))
    return cat.json
  }
  // A 304 has no body, not even the "null" a typed send would serialize; its ETag is sent again.
  const notModifiedReply = (reply: FastifyReply, etag: string): FastifyReply => reply.code(304).header('etag', etag).send()
  // The preconditions of a request; CATS_IF_MATCH=required makes If-Match mandatory on writes.
  const ifMatchRequired = CATS_IF_MATCH === 'required'
  const conditionOf = (request: FastifyRequest): VersionCondition => ({
    match: ifMatchVersions(request.headers['if-match']),
    noneMatch: ifNoneMatchVersions(request.headers['if-none-match'])
  })
  const writeCondition = (request: FastifyRequest): VersionCondition | undefined => {
    const condition = conditionOf(request)
    if (condition.match === undefined && ifMatchRequired) throw new PreconditionRequired()
    return condition.match === undefined && condition.noneMatch === undefined ? undefined : condition
  }
  const conditionErrors = { 412: preconditionFailed, ...(ifMatchRequired ? { 428: preconditionRequired } : {}) }

  // What PUT and PATCH share besides their bodies: the errors they document, and the steps around the store's write
  // (preconditions, then the body's problems, then memory), whose answer is the cat as stored, serialized once.
  const writeErrors = {
    ...authErrors, ...conditionErrors, 413: catTooLarge, 415: unsupportedMediaType, 503: storeUnavailable, 507: insufficientStorage
  }
  const writeCat = (request: FastifyRequest, reply: FastifyReply, findProblems: () => FieldError[],
    write: (condition: VersionCondition | undefined) => MaybePromise<VersionedCat | undefined>): MaybePromise<string> => {
    const condition = writeCondition(request)
    const problems = findProblems()
    if (problems.length > 0) throw invalidRequest('body', problems)
    assertMemoryForWrites()
    return mapMaybePromise(write(condition), (cat) => catOrEmpty(reply, cat))
  }

  // heapUsed is under-pressure's once-a-second sample, so the check costs nothing per request.
  const canWrite = writesAllowed(getHeapStatistics().heap_size_limit, WRITE_HEAP_RATIO, () => fastify.memoryUsage().heapUsed)
  const assertMemoryForWrites = (): void => {
    if (!canWrite()) throw new LowMemory()
  }

  const lists = new Lists(catsStore, { maxStreams: LIST_STREAMS_MAX, writeTimeoutMs: LIST_WRITE_TIMEOUT_MS })
  // The list's path as registered, the host's prefix included: a page's Link names it, never the request target, so a
  // client chooses nothing in the Link (a fragment, an absolute-form target's host).
  const listPath = fastify.prefix

  fastify.post('', {
    ...authHook,
    schema: {
      tags: ['cats'],
      operationId: 'createCat',
      summary: 'Create a cat',
      ...security,
      headers: CreateCatHeaders,
      body: ref(CreateCatBody),
      response: {
        201: JsonText(ref(CatReply, { description: 'The cat as created, with its new id (or, for a repeated Idempotency-Key, the first answer replayed)' })),
        400: badRequest('The body is not JSON, a field is missing or of the wrong type, or the Idempotency-Key is malformed', 'body.age', 'must be integer'),
        ...authErrors,
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
    const { name, age, breed } = request.body
    // Per user when creates need a token, so one user's key never answers another's request.
    const user = tokenRequired ? userKey(verifiedOf(request).identity.userId) : undefined
    const result = catsStore.createOnce(request.body, {
      scope: user ?? '',
      key,
      // A hash, not the body: a repeat is recognised without keeping what it sent.
      fingerprint: createHash('sha256').update(JSON.stringify([name, age, breed])).digest('base64url'),
      // The keys a client may keep are counted against it: the user, or the address as every limit per client counts it.
      client: user ?? clientAddress(addressOf(request))
    })
    return mapMaybePromise(result, ({ json, replayed }) => {
      if (replayed) reply.header('idempotent-replayed', 'true')
      return json
    })
  })

  fastify.get('', {
    ...authHook,
    schema: {
      tags: ['cats'],
      operationId: 'listCats',
      summary: 'List the cats in creation order: all of them, or a page with limit and after',
      description: 'Without a query, the whole list; with limit or after, a page. Either is streamed when it is larger than one chunk: ' +
        `at most ${LIST_STREAMS_MAX} lists stream at once (503 with Retry-After past it), and one whose reader takes nothing for ` +
        `${LIST_WRITE_TIMEOUT_MS} ms is cut off. The Link of a page names the service's own path.`,
      ...security,
      headers: ListConditionHeaders,
      querystring: ListCatsQuery,
      response: {
        200: { ...JsonText(StoredCatList), headers: { etag: { type: 'string', description: 'Weak: changes whenever any cat does' } } },
        304: notModified('The list is unchanged since the ETag in If-None-Match'),
        400: badRequest('limit is not an integer from 1 to 1000, or after is not a cursor from a Link header', 'querystring.limit', 'must be <= 1000'),
        ...authErrors,
        503: listUnavailable
      }
    }
  }, async (request, reply) => {
    const { limit, after } = request.query
    // Ajv lets a coerced 1e400 or Infinity through its bounds: the bound is checked again here.
    if (limit !== undefined && !Number.isFinite(limit)) throw invalidRequest('querystring', [{ instancePath: '/limit', message: 'must be <= 1000' }])
    const position = after === undefined ? 0 : decodeCursor(after)
    if (position === undefined) throw invalidRequest('querystring', [{ instancePath: '/after', message: 'is not a cursor from a Link header' }])
    // Read before the cats, so that a change while they are read makes the tag older, never newer, than the list.
    const version = await catsStore.listVersion()
    const etag = weakTag(version)
    if (!meetsCondition({ noneMatch: ifNoneMatchVersions(request.headers['if-none-match']) }, version)) return notModifiedReply(reply, etag)
    // The whole list without a query; `after` alone pages by the largest page.
    const limited = limit ?? (after === undefined ? undefined : LIST_CHUNK)
    const list = await lists.json(reply.raw, { after: position, limit: limited, version })
    if (list === undefined) throw new TooManyLists()
    if (list.more && limited !== undefined) {
      reply.header('link', `<${listPath}?limit=${limited}&after=${encodeCursor(list.last)}>; rel="next"`)
    }
    return reply.type(JSON_CONTENT_TYPE).header('etag', etag).send(list.body)
  })

  fastify.get('/:id', {
    ...authHook,
    schema: {
      tags: ['cats'],
      operationId: 'getCat',
      summary: 'Read one cat (an empty 200 when no cat has this id)',
      ...security,
      params: CatIdParams,
      headers: ConditionHeaders,
      response: {
        200: catOrEmptyResponse('The cat, or an empty text/plain body when no cat has this id', JsonText(ref(StoredCat))),
        304: notModified('The cat is unchanged since the ETag in If-None-Match'),
        400: badId,
        ...authErrors,
        412: preconditionFailed,
        503: storeUnavailable
      }
    }
  }, (request, reply) => mapMaybePromise(catsStore.find(catId(request.params)), (cat) => {
    const { match, noneMatch } = conditionOf(request)
    if (!meetsCondition({ match }, cat?.version)) throw new PreconditionFailed()
    if (cat !== undefined && !meetsCondition({ noneMatch }, cat.version)) return notModifiedReply(reply, strongTag(cat.version))
    return catOrEmpty(reply, cat)
  }))

  fastify.put('/:id', {
    ...authHook,
    schema: {
      tags: ['cats'],
      operationId: 'updateCat',
      summary: 'Merge fields into a cat (an empty 200 when no cat has this id)',
      ...security,
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
    (condition) => catsStore.update(catId(request.params), request.body, condition)))

  // PATCH takes only merge patches: in a scope of its own, whose one body parser is for that media type, so any
  // other gets 415 (and the other routes here never take it).
  await fastify.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>()
    scope.removeAllContentTypeParsers()
    // Fastify's JSON parser as it parses by default: a __proto__ or constructor.prototype key is an error.
    scope.addContentTypeParser(MERGE_PATCH_CONTENT_TYPE, { parseAs: 'string' }, scope.getDefaultJsonParser('error', 'error'))
    // RFC 5789 §2.2: a 415 names the patch formats the resource takes.
    scope.addHook('onError', async (_request, reply, error) => {
      if (error.statusCode === 415) reply.header('accept-patch', MERGE_PATCH_CONTENT_TYPE)
    })
    scope.patch('/:id', {
      ...authHook,
      schema: {
        tags: ['cats'],
        operationId: 'patchCat',
        summary: 'Apply a JSON merge patch to a cat (an empty 200 when no cat has this id)',
        ...security,
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
      (condition) => catsStore.patch(catId(request.params), request.body, condition)))
  })

  fastify.delete('/:id', {
    ...authHook,
    schema: {
      tags: ['cats'],
      operationId: 'deleteCat',
      summary: 'Delete the earliest created cat with this id',
      ...security,
      params: CatIdParams,
      headers: ConditionHeaders,
      response: {
        200: ref(DeleteReply, { description: 'Deleted, or there was no cat with this id (and no If-Match)' }),
        400: badId,
        ...authErrors,
        ...conditionErrors,
        503: storeUnavailable
      }
    }
  }, (request) => mapMaybePromise(catsStore.remove(catId(request.params), writeCondition(request)), () => ({ deleted: true as const })))
}

export default cats
