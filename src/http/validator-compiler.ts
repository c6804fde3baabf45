import { Ajv, type AnySchema, type Options, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify'

/** What Fastify uses of an Ajv validator: the call (with the parent data when given) and `errors`. */
interface Validator {
  (data: unknown, context?: Parameters<ValidateFunction>[1]): boolean
  errors?: ValidateFunction['errors']
}

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
 * A validator that compiles its schema when it is first called rather than at
 * start: compiling every route's schemas up front is a large part of the start-up,
 * and a process may never receive some of the requests they check. It passes on
 * what Fastify reads of an Ajv validator: `errors` after a call, and `schemaEnv`,
 * whose presence makes Fastify pass the parent object so Ajv can replace a coerced root.
 */
export function validatorOnFirstUse (compile: () => ValidateFunction): Validator {
  let compiled: ValidateFunction | undefined
  const validator = (): ValidateFunction => (compiled ??= compile())
  const validate: Validator = (data, context) => {
    const check = validator()
    const valid = check(data, context)
    validate.errors = check.errors
    return valid
  }
  Object.defineProperty(validate, 'schemaEnv', { get: () => validator().schemaEnv })
  return validate
}

/**
 * One Ajv per HTTP part: bodies are never coerced ("3" is not an integer),
 * while params, querystring and headers arrive as strings and may be.
 * Every failing field is reported (allErrors): the request schemas here have a few fields
 * each, so that is a few errors, and an error body lists at most the first ten whatever a
 * schema allows. `sharedSchemas` are the schemas routes reference by `$id`. Both Ajv
 * instances and every validator are built on first use.
 */
export function createValidatorCompiler (sharedSchemas: AnySchema[]): FastifySchemaCompiler<AnySchema> {
  let bodyAjv: Ajv | undefined
  let otherAjv: Ajv | undefined
  const ajvFor = (httpPart: string | undefined): Ajv => httpPart === 'body'
    ? (bodyAjv ??= createAjv(false, sharedSchemas))
    : (otherAjv ??= createAjv('array', sharedSchemas))
  return ({ schema, httpPart }) => validatorOnFirstUse(() => ajvFor(httpPart).compile(schema))
}

/**
 * The service's validation in `fastify`'s scope: the validator compiler above, and `sharedSchemas`
 * registered with Fastify too, for its serializers and the OpenAPI document.
 */
export function useValidation (fastify: FastifyInstance, sharedSchemas: AnySchema[]): void {
  fastify.setValidatorCompiler(createValidatorCompiler(sharedSchemas))
  for (const schema of sharedSchemas) fastify.addSchema(schema)
}
