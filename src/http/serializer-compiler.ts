import type { SerializerFactory } from '@fastify/fast-json-stringify-compiler'

/**
 * Wraps a serializer factory (Fastify's default is fast-json-stringify's) so that each response schema is
 * compiled when a reply of its status is first sent, not at start: every route has a schema per status it may
 * answer with (twice for a GET, once more for its HEAD), and compiling them all made most of the start-up time.
 */
export function serializersOnFirstUse (build: SerializerFactory): SerializerFactory {
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined
      return (doc) => (serialize ??= compile(route))(doc)
    }
  }
}
