import type { FastifySchema } from 'fastify'
import type { SwaggerTransformObject } from '@fastify/swagger'
import { INTEGER_TEXT_PATTERN, SCHEMA_NAMESPACE, integerTextDocument } from './schemas.js'
import { isServiceSchemaId, type BuildLocalReference } from './host-openapi.js'

/**
 * Where the OpenAPI document says what a client sees rather than how the
 * service validates. Both rewrite copies; the route schemas stay as they are.
 */

interface ObjectSchema {
  properties?: Record<string, { pattern?: string, description?: string }>
}

/**
 * Path and query parameters validated as `IntegerText` (decimal digits) are
 * documented as integers: that is what a client holds and sends.
 */
export function documentParams (schema: FastifySchema): FastifySchema {
  const params = schema.params as ObjectSchema | undefined
  if (params?.properties === undefined) return schema
  const properties = Object.fromEntries(Object.entries(params.properties).map(([name, property]) =>
    [name, property.pattern === INTEGER_TEXT_PATTERN ? integerTextDocument(property.description) : property]))
  return { ...schema, params: { ...params, properties } }
}

interface HeadersSchema {
  properties?: Record<string, unknown>
  required?: string[]
}

/**
 * A header the service requires without letting validation refuse it (`If-Match` with CATS_IF_MATCH=required is
 * answered 428, not 400) is required in the document: a generated client must send it.
 */
export function documentRequiredHeader (schema: FastifySchema, header: string): FastifySchema {
  const headers = schema.headers as HeadersSchema | undefined
  if (headers?.properties?.[header] === undefined) return schema
  return { ...schema, headers: { ...headers, required: [...(headers.required ?? []), header] } }
}

interface Document {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { $ref?: string } }> } }>>
  components: { schemas: Record<string, { additionalProperties?: unknown }> }
}

const COMPONENT = '#/components/schemas/'

/**
 * Request bodies lose `additionalProperties: false` in the document: the
 * validator removes unknown fields instead of refusing them, so a validating
 * client or gateway must let them through too.
 */
export const documentRequestBodies: SwaggerTransformObject = (documentObject) => {
  // Only OpenAPI (never Swagger 2) is configured, so the object is always `openapiObject`.
  const { openapiObject } = documentObject as { openapiObject: Document }
  const { paths, components } = openapiObject
  for (const operation of Object.values(paths).flatMap((methods) => Object.values(methods))) {
    for (const { schema } of Object.values(operation.requestBody?.content ?? {})) {
      const component = schema.$ref?.startsWith(COMPONENT) === true ? components.schemas[schema.$ref.slice(COMPONENT.length)] : undefined
      if (component?.additionalProperties === false) delete component.additionalProperties
    }
  }
  return openapiObject
}

/** The start of the names `ownComponentName` gives the schemas of a host, which `withoutHostSchemas` drops. */
const HOST_SCHEMA = 'host-schema-'

/**
 * Component names in the service's own document: its shared schemas' `$id` without the namespace (`StoredCat`).
 * Its scope inherits a host's `$id` schemas too, which no route of the service references: they get names apart.
 */
export const ownComponentName: BuildLocalReference = (json, _baseUri, _fragment, i) =>
  isServiceSchemaId(json.$id) ? json.$id.slice(SCHEMA_NAMESPACE.length) : `${HOST_SCHEMA}${i}`

/** The service's own document describes the service: a host's schemas are left out of its components. */
export const withoutHostSchemas: SwaggerTransformObject = (documentObject) => {
  const { openapiObject } = documentObject as { openapiObject: Document }
  for (const name of Object.keys(openapiObject.components.schemas)) {
    if (name.startsWith(HOST_SCHEMA)) delete openapiObject.components.schemas[name]
  }
  return openapiObject
}
