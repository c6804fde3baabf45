import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { notModifiedReply } from '../../src/cats/cat-replies.js'
import { meetsCondition } from '../../src/cats/cats-store.js'
import { LIST_CHUNK, Lists, decodeCursor, encodeCursor } from '../../src/cats/list-paging.js'
import { routeAccess } from '../../src/cats/route-access.js'
import { JSON_CONTENT_TYPE, JsonText, ListCatsQuery, ListConditionHeaders, StoredCatList, notModified } from '../../src/cats/schemas.js'
import { TooManyLists } from '../../src/errors.js'
import { ifNoneMatchVersions, weakTag } from '../../src/http/entity-tags.js'
import { badRequest, listUnavailable } from '../../src/http/error-response-schemas.js'
import { invalidRequest } from '../../src/http/validation-issues.js'
import { serviceDecorator } from '../../src/service-scope.js'

/** GET /cats: the whole list, or a page with limit and after, streamed when it is larger than one chunk. */
// Named `cats` in every file here: a trace names a handler's span after its plugin (`handler - cats`).
const cats: FastifyPluginAsyncTypebox = async (fastify) => {
  const { LIST_STREAMS_MAX, LIST_WRITE_TIMEOUT_MS } = serviceDecorator(fastify, 'catsConfig')
  const catsStore = serviceDecorator(fastify, 'catsStore')
  const access = routeAccess(fastify)
  const lists = new Lists(catsStore, { maxStreams: LIST_STREAMS_MAX, writeTimeoutMs: LIST_WRITE_TIMEOUT_MS })
  // The list's path as registered, the host's prefix included: a page's Link names it, never the request target, so a
  // client chooses nothing in the Link (a fragment, an absolute-form target's host).
  const listPath = fastify.prefix
  fastify.get('', {
    ...access.authHook,
    schema: {
      tags: ['cats'],
      operationId: 'listCats',
      summary: 'List the cats in creation order: all of them, or a page with limit and after',
      description: 'Without a query, the whole list; with limit or after, a page. Either is streamed when it is larger than one chunk: ' +
        `at most ${LIST_STREAMS_MAX} lists stream at once (503 with Retry-After past it), and one whose reader takes nothing for ` +
        `${LIST_WRITE_TIMEOUT_MS} ms is cut off. The Link of a page names the service's own path.`,
      ...access.security,
      headers: ListConditionHeaders,
      querystring: ListCatsQuery,
      response: {
        200: { ...JsonText(StoredCatList), headers: { etag: { type: 'string', description: 'Weak: changes whenever any cat does' } } },
        304: notModified('The list is unchanged since the ETag in If-None-Match'),
        400: badRequest('limit is not an integer from 1 to 1000, or after is not a cursor from a Link header', 'querystring.limit', 'must be <= 1000'),
        ...access.authErrors,
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
}

export default cats
