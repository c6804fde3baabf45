import type { SerializerFactory } from '@fastify/fast-json-stringify-compiler'

/**
 * Wraps a serializer factory (Fastify's default is fast-json-stringify's) so that
 * each response schema is compiled when a reply of its status is first sent rather
 * than at start. Every route has a schema for each status it may answer with, and
 * Fastify also compiles each GET's schemas again for its HEAD route: compiling
 * them all up front was most of the time from the routes' registration to listening.
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
