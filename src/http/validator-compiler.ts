import { Ajv, type AnySchema, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

function createAjv (coerceTypes: Options['coerceTypes'], sharedSchemas: AnySchema[]): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: true,
    useDefaults: true,
    addUsedSchema: false,
    // The schemas are built with TypeBox in this codebase; checking them against the
    // JSON Schema meta-schema would compile that meta-schema at every start.
    validateSchema: false,
    coerceTypes
  })
  addFormats.default(ajv)
  ajv.addSchema(sharedSchemas)
  return ajv
}

/**
 * One Ajv per HTTP part: bodies are never coerced ("3" is not an integer),
 * while params, querystring and headers arrive as strings and may be.
 * Every failing field is reported (allErrors). `sharedSchemas` are the schemas
 * routes reference by `$id`.
 */
export function createValidatorCompiler (sharedSchemas: AnySchema[]): FastifySchemaCompiler<AnySchema> {
  const bodyAjv = createAjv(false, sharedSchemas)
  const otherAjv = createAjv('array', sharedSchemas)
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : otherAjv).compile(schema)
}
