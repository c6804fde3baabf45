import { Type, type Static, type TSchema } from '@sinclair/typebox'

const catFields = {
  name: Type.String({ examples: ['Tom'] }),
  age: Type.Integer({ examples: [3] }),
  breed: Type.String({ examples: ['Siamese'] })
}

/** POST /cats body: unknown fields are removed before the handler runs. */
export const CreateCatBody = Type.Object(catFields, { additionalProperties: false })
export type CreateCatBody = Static<typeof CreateCatBody>

/** A cat as created: exactly id plus the three declared fields. */
export const CatReply = Type.Object({ id: Type.Integer(), ...catFields })
export type CatReply = Static<typeof CatReply>

/**
 * A cat as stored. PUT merges any fields without type checks, so beyond `id`
 * a stored value can be any JSON value; the schema must not coerce them.
 */
export const StoredCat = Type.Object({ id: Type.Integer() }, {
  additionalProperties: true,
  description: 'A stored cat: id plus name, age, breed as created, and any fields merged by PUT, as sent'
})
export type StoredCat = Static<typeof StoredCat> & Record<string, unknown>

export const StoredCatList = Type.Array(StoredCat)

/** PUT /cats/:id body: any JSON object, merged shallowly. */
export const UpdateCatBody = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Fields to merge into the cat; id is ignored'
})
export type UpdateCatBody = Static<typeof UpdateCatBody>

export const CatIdParams = Type.Object({
  id: Type.String({ pattern: '^-?[0-9]{1,15}$', description: 'Cat id: an integer in decimal digits' })
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

export const DeleteReply = Type.Object({ deleted: Type.Literal(true) })
export type DeleteReply = Static<typeof DeleteReply>

/**
 * A response whose handler returns JSON text already serialized (the stores keep
 * each cat's JSON). The schema still documents the shape; Fastify sends a string
 * with a JSON content type as it is.
 */
export const JsonText = <T extends TSchema>(schema: T) => Type.Unsafe<string>(schema)
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
