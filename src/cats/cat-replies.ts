import type { FastifyReply } from 'fastify'
import { badRequest } from '../http/error-response-schemas.js'
import { strongTag } from '../http/entity-tags.js'
import { INTEGER_TEXT_PATTERN } from '../http/schemas.js'
import type { VersionedCat } from './cats-store.js'
import { JSON_CONTENT_TYPE, TEXT_CONTENT_TYPE, type CatIdParams } from './schemas.js'

/** The id of `/cats/:id`, as the store takes it (the schema's pattern has made it digits). */
export const catIdOf = (params: CatIdParams): number => Number(params.id)

/** The 400 of an id that is not an integer in decimal digits. */
export const badIdResponse = badRequest('The id is not an integer in decimal digits', 'params.id', `must match pattern "${INTEGER_TEXT_PATTERN}"`)

/**
 * A cat's JSON text as the store keeps it, with its ETag; when no cat has the id, an empty 200, as text/plain so
 * that no client parses it as a cat.
 */
export function catOrEmptyBody (reply: FastifyReply, cat: VersionedCat | undefined): string {
  if (cat === undefined) {
    reply.type(TEXT_CONTENT_TYPE)
    return ''
  }
  reply.type(JSON_CONTENT_TYPE).header('etag', strongTag(cat.version))
  return cat.json
}

/** A 304 has no body, not even the "null" a typed send would serialize; its ETag is sent again. */
export const notModifiedReply = (reply: FastifyReply, etag: string): FastifyReply => reply.code(304).header('etag', etag).send()
