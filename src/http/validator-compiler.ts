import { Ajv, type AnySchema, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

function createAjv (coerceTypes: Options['coerceTypes']): Ajv {
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
  return ajv
}

/**
 * One Ajv per HTTP part: bodies are never coerced ("3" is not an integer),
 * while params, querystring and headers arrive as strings and may be.
 * Every failing field is reported (allErrors).
 */
export function createValidatorCompiler (): FastifySchemaCompiler<AnySchema> {
  const bodyAjv = createAjv(false)
  const otherAjv = createAjv('array')
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : otherAjv).compile(schema)
}
