import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

const DOCUMENT_ID = 'openapi.json'

/** A JSON pointer segment in a URI fragment: `/` and `~` escaped, then `{` and `}` percent-encoded. */
const segment = (key: string): string => encodeURIComponent(key.replaceAll('~', '~0').replaceAll('/', '~1'))

interface Responses {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>
}

export interface ReceivedResponse {
  method: string
  /** The route as Fastify knows it, e.g. `/cats/:id`. */
  route: string
  statusCode: number
  contentType: string
  body: string
}

/**
 * Checks responses against the OpenAPI document's response schemas (JSON Schema
 * 2020-12 in OpenAPI 3.1, compiled with Ajv). Returns what does not match, or
 * undefined; routes the document does not list (such as /docs) are not checked.
 */
export function openapiResponseChecker (openapiDocument: unknown): (response: ReceivedResponse) => string | undefined {
  const document = openapiDocument as Responses
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addSchema(document, DOCUMENT_ID)
  // Ajv caches compiled schemas by object, so each response schema is compiled once here and kept.
  const validators = new Map<string, ValidateFunction>()

  return ({ method, route, statusCode, contentType, body }) => {
    const path = route.replace(/:(\w+)/g, '{$1}')
    const operation = document.paths[path]?.[method.toLowerCase()]
    if (operation === undefined) return undefined
    const where = `${method} ${path} ${statusCode}`
    const documented = operation.responses[String(statusCode)]
    if (documented === undefined) return `${where}: status not documented`
    // A response documented without content (a 204) must come without a body.
    if (documented.content === undefined) return body === '' ? undefined : `${where}: a body where the document has none`
    const mediaType = contentType.split(';')[0].trim()
    if (documented.content?.[mediaType] === undefined) return `${where}: media type "${mediaType}" not documented`
    const pointer = ['paths', path, method.toLowerCase(), 'responses', String(statusCode), 'content', mediaType, 'schema'].map(segment).join('/')
    const validate = validators.get(pointer) ?? ajv.compile({ $ref: `${DOCUMENT_ID}#/${pointer}` })
    validators.set(pointer, validate)
    // A JSON media type whose body does not parse throws here, failing the test too.
    const value: unknown = mediaType.endsWith('json') ? JSON.parse(body) : body
    return validate(value) ? undefined : `${where}: ${ajv.errorsText(validate.errors)}`
  }
}
