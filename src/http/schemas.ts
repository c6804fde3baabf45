import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox'

/**
 * The start of every `$id` of the service's shared schemas. A host's own schemas share one store with them in
 * Fastify (a child scope cannot add an `$id` its parent has) and in a host's @fastify/swagger (which merges
 * every scope's schemas by `$id`), so the service's cannot be plain names such as `Error`. No `/` or `:`: a
 * `$ref` inside one of them resolves against its `$id` as a relative URI, to another of the namespace.
 */
export const SCHEMA_NAMESPACE = 'cats-auth-service.'

/** The `$id` of the shared schema the OpenAPI document of the service names `name`. */
export const schemaId = (name: string): string => SCHEMA_NAMESPACE + name

/**
 * A reference to a shared schema (one with an `$id`, registered once with
 * `fastify.addSchema`) that keeps the referenced schema's static type, so
 * handlers are typed through the reference. The OpenAPI document names a
 * component after the `$id` (without the namespace in the service's own).
 */
export const ref = <T extends TSchema>(schema: T, options: Record<string, unknown> = {}): TUnsafe<Static<T>> =>
  Type.Unsafe<Static<T>>(Type.Ref(String(schema.$id), options))

/**
 * An integer written in decimal digits, optionally negative: the wire rule for
 * ids in a path. The OpenAPI document shows it as what a client sends, an
 * integer (see `integerTextDocument`), while validation keeps the pattern, so
 * `1e1`, `0x10` or ` 1` are still refused.
 */
export const INTEGER_TEXT_PATTERN = '^-?[0-9]{1,15}$'
export const IntegerText = (description: string) => Type.String({ pattern: INTEGER_TEXT_PATTERN, description })

/** The document form of an `IntegerText`: at most 15 digits either side of zero. */
export const integerTextDocument = (description: string | undefined): Record<string, unknown> => ({
  type: 'integer',
  minimum: -999_999_999_999_999,
  maximum: 999_999_999_999_999,
  description
})

/** OpenAPI security requirement of the routes behind the token guard. */
export const BEARER_SECURITY = [{ bearerAuth: [] }]

/** OpenAPI security requirement of the routes anyone may call. */
export const NO_SECURITY = []
