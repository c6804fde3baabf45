import { createHash } from 'node:crypto'
import { getHeapStatistics } from 'node:v8'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CatIdParams, CatReply, CreateCatBody, CreateCatHeaders, DeleteReply, JSON_CONTENT_TYPE, JsonText, ListCatsQuery, StoredCat, StoredCatList, UpdateCatBody
} from '../../src/cats/schemas.js'
import { LIST_CHUNK, decodeCursor, encodeCursor, wholeListJson } from '../../src/cats/list-paging.js'
import { BEARER_SECURITY, ErrorReply } from '../../src/http/schemas.js'
import { LowMemory } from '../../src/http/errors.js'
import { invalidRequest } from '../../src/http/validation-issues.js'
import { writesAllowed } from '../../src/cats/memory-guard.js'
import { findMergeProblems } from '../../src/cats/merge-safety.js'

const cats: FastifyPluginAsyncTypebox = async (fastify) => {
  const { CATS_AUTH, WRITE_HEAP_RATIO } = fastify.config
  // Public by default; CATS_AUTH=required puts the token guard on every route here.
  const guarded = CATS_AUTH === 'required'
  const guard = guarded ? { onRequest: fastify.authenticate } : {}
  const security = guarded ? { security: BEARER_SECURITY } : {}
  const authErrors = guarded ? { 401: ErrorReply } : {}
  const catId = (params: CatIdParams): number => Number(params.id)

  // heapUsed is under-pressure's once-a-second sample, so the check costs nothing per request.
  const canWrite = writesAllowed(getHeapStatistics().heap_size_limit, WRITE_HEAP_RATIO, () => fastify.memoryUsage().heapUsed)
  const assertMemoryForWrites = (): void => {
    if (!canWrite()) throw new LowMemory()
  }

  fastify.post('', {
    ...guard,
    schema: {
      tags: ['cats'],
      summary: 'Create a cat',
      ...security,
      headers: CreateCatHeaders,
      body: CreateCatBody,
      response: {
        201: CatReply, 400: ErrorReply, ...authErrors, 409: ErrorReply, 413: ErrorReply, 415: ErrorReply, 422: ErrorReply, 503: ErrorReply, 507: ErrorReply
      }
    }
  }, async (request, reply) => {
    assertMemoryForWrites()
    const key = request.headers['idempotency-key']
    reply.code(201)
    if (key === undefined) return fastify.catsStore.create(request.body)
    const { name, age, breed } = request.body
    const result = await fastify.catsStore.createOnce(request.body, {
      // Per user when creates need a token, so one user's key never answers another's request.
      scope: guarded ? String(request.user.userId) : '',
      key,
      fingerprint: createHash('sha256').update(JSON.stringify([name, age, breed])).digest('base64url')
    })
    if (!result.replayed) return result.cat
    reply.header('idempotent-replayed', 'true')
    // The JSON kept at creation has exactly the reply's fields in its order, so it serializes back byte for byte.
    const first: CatReply = JSON.parse(result.json)
    return first
  })

  fastify.get('', {
    ...guard,
    schema: {
      tags: ['cats'],
      summary: 'List the cats in creation order: all of them, or a page with limit and after',
      ...security,
      querystring: ListCatsQuery,
      response: { 200: JsonText(StoredCatList), 400: ErrorReply, ...authErrors, 503: ErrorReply }
    }
  }, async (request, reply) => {
    const { limit, after } = request.query
    reply.type(JSON_CONTENT_TYPE)
    if (limit === undefined && after === undefined) return wholeListJson(fastify.catsStore)
    const position = after === undefined ? 0 : decodeCursor(after)
    if (position === undefined) throw invalidRequest('querystring', [{ instancePath: '/after', message: 'is not a cursor from a Link header' }])
    const pageSize = limit ?? LIST_CHUNK
    const page = await fastify.catsStore.page(position, pageSize)
    if (page.more) {
      const path = request.url.split('?', 1)[0]
      reply.header('link', `<${path}?limit=${pageSize}&after=${encodeCursor(page.last)}>; rel="next"`)
    }
    return `[${page.items}]`
  })

  fastify.get('/:id', {
    ...guard,
    schema: {
      tags: ['cats'],
      summary: 'Read one cat (an empty 200 when no cat has this id)',
      ...security,
      params: CatIdParams,
      response: { 200: JsonText(StoredCat), 400: ErrorReply, ...authErrors, 503: ErrorReply }
    }
  }, async (request, reply) => {
    const json = await fastify.catsStore.findJson(catId(request.params))
    if (json === undefined) return
    reply.type(JSON_CONTENT_TYPE)
    return json
  })

  fastify.put('/:id', {
    ...guard,
    schema: {
      tags: ['cats'],
      summary: 'Merge fields into a cat (an empty 200 when no cat has this id)',
      ...security,
      params: CatIdParams,
      body: UpdateCatBody,
      response: { 200: StoredCat, 400: ErrorReply, ...authErrors, 413: ErrorReply, 415: ErrorReply, 503: ErrorReply, 507: ErrorReply }
    }
  }, async (request) => {
    const problems = findMergeProblems(request.body)
    if (problems.length > 0) throw invalidRequest('body', problems)
    assertMemoryForWrites()
    return fastify.catsStore.update(catId(request.params), request.body)
  })

  fastify.delete('/:id', {
    ...guard,
    schema: {
      tags: ['cats'],
      summary: 'Delete the earliest created cat with this id',
      ...security,
      params: CatIdParams,
      response: { 200: DeleteReply, 400: ErrorReply, ...authErrors, 503: ErrorReply }
    }
  }, async (request) => {
    await fastify.catsStore.remove(catId(request.params))
    return { deleted: true as const }
  })
}

export default cats
