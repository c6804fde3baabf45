import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { IntegerText, ref, schemaId } from '../http/schemas.js'

const catFields = {
  name: Type.String({ examples: ['Tom'] }),
  age: Type.Integer({ examples: [3] }),
  breed: Type.String({ examples: ['Siamese'] })
}

/**
 * POST /cats body: unknown fields are removed before the handler runs
 * (`additionalProperties: false` with the validator's removeAdditional). The
 * OpenAPI document leaves that keyword out, since such fields are accepted.
 */
export const CreateCatBody = Type.Object(catFields, {
  $id: schemaId('NewCat'),
  additionalProperties: false,
  description: 'A cat to create; other fields are accepted and ignored',
  examples: [{ name: 'Tom', age: 3, breed: 'Siamese' }]
})
export type CreateCatBody = Static<typeof CreateCatBody>

/** A cat as created: exactly id plus the three declared fields. */
export const CatReply = Type.Object({ id: Type.Integer({ description: 'Assigned by the service' }), ...catFields }, {
  $id: schemaId('Cat'),
  additionalProperties: false,
  description: 'A cat as created: its id and the three fields it was created with'
})
export type CatReply = Static<typeof CatReply>

/** A field a stored cat always has: as created, unless a PUT replaced it with any JSON value. */
const mergedField = (created: string, example: unknown) => Type.Unknown({
  description: `${created} when created; a PUT may have replaced it with any JSON value (never removed)`,
  examples: [example]
})

/**
 * A cat as stored. `id`, `name`, `age` and `breed` are always present: a merge
 * never removes a key and never changes `id`. PUT merges without type checks, so
 * a stored `name`, `age` or `breed` may hold any JSON value (`null` included);
 * a client checks the type before use. Any other merged field is kept as sent.
 */
export const StoredCat = Type.Object({
  id: Type.Integer({ description: 'Assigned by the service; never changes' }),
  name: mergedField('A string', 'Tom'),
  age: mergedField('An integer', 3),
  breed: mergedField('A string', 'Siamese')
}, {
  $id: schemaId('StoredCat'),
  additionalProperties: true,
  description: 'A stored cat: id, name, age and breed, and any fields merged by PUT, as sent'
})
export type StoredCat = Static<typeof StoredCat> & Record<string, unknown>

export const StoredCatList = Type.Array(ref(StoredCat), { description: 'Every cat, in creation order' })

/** PUT /cats/:id body: any JSON object, merged shallowly. */
export const UpdateCatBody = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Fields to merge into the cat; id is ignored'
})
export type UpdateCatBody = Static<typeof UpdateCatBody>

/** The media type of PATCH /cats/:id bodies (RFC 7396). */
export const MERGE_PATCH_CONTENT_TYPE = 'application/merge-patch+json'

/** PATCH /cats/:id body: any JSON object, applied as a merge patch. */
export const CatMergePatch = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A JSON merge patch (RFC 7396): `null` removes a field, an object merges into the field recursively, any other value replaces it. ' +
    '`name`, `age` and `breed` cannot be removed; `id` is ignored.',
  examples: [{ age: 4, toy: null, owner: { city: 'Oslo' } }]
})

const ifNoneMatch = Type.Optional(Type.String({
  description: 'ETags of an earlier answer (`*`: any). A read answers 304 without a body while one is current; a write answers 412 and changes nothing'
}))

/** The preconditions of a request on one cat (RFC 9110 §13.1), with the ETags of GET, PUT and PATCH answers. */
export const ConditionHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({
    description: 'Only while the cat still has one of these ETags (`*`: any cat with the id); else 412 and nothing changes'
  })),
  'if-none-match': ifNoneMatch
})

/** A conditional list: the list's weak ETag. */
export const ListConditionHeaders = Type.Object({ 'if-none-match': ifNoneMatch })

export const CatIdParams = Type.Object({
  id: IntegerText('The cat id: an integer in decimal digits')
})
export type CatIdParams = Static<typeof CatIdParams>

/** POST /cats headers: a key makes the create safe to retry. */
export const CreateCatHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    pattern: '^[\\x21-\\x7E]{1,255}$',
    description: 'Makes the create safe to retry: a repeat with the same key and body within 24 h creates nothing and gets the first answer with Idempotent-Replayed: true; 409 while the first is in progress, 422 with a different body. 1–255 visible ASCII characters.'
  }))
})
export type CreateCatHeaders = Static<typeof CreateCatHeaders>

/** GET /cats paging: without either, the whole list. */
export const ListCatsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'At most this many cats, in creation order; a Link header with rel="next" names the next page' })),
  after: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'Opaque cursor taken from the Link header of the previous page' }))
})
export type ListCatsQuery = Static<typeof ListCatsQuery>

export const DeleteReply = Type.Object({ deleted: Type.Literal(true) }, {
  $id: schemaId('DeleteResult'),
  description: 'Sent whether or not a cat had this id'
})
export type DeleteReply = Static<typeof DeleteReply>

/**
 * A response whose handler returns JSON text already serialized (the stores keep
 * each cat's JSON). The schema still documents the shape; Fastify sends a string
 * with a JSON content type as it is.
 */
export const JsonText = <T extends TSchema>(schema: T) => Type.Unsafe<string>(schema)
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
export const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8'

/**
 * A 200 that is either the cat (JSON) or, when no cat has the id, an empty
 * body sent as text/plain. Two media types keep the empty case out of the cat's
 * schema: a generated client sees `StoredCat | string` (openapi-fetch gives
 * `undefined` for the empty body) and must check for an object before reading
 * a field.
 */
export const catOrEmptyResponse = <T extends TSchema>(description: string, cat: T) => ({
  description,
  headers: { etag: { type: 'string', description: 'The cat\'s version, for If-None-Match and If-Match (none with the empty body)' } },
  content: {
    'application/json': { schema: cat },
    'text/plain': { schema: Type.String({ maxLength: 0, description: 'Empty: no cat has this id' }) }
  }
})

/** A 304: what the client holds is current; the ETag is sent again, the body is not. */
export const notModified = (description: string) => Type.Null({ description, headers: { etag: { type: 'string' } } })
