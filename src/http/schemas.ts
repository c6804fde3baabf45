import { STATUS_CODES } from 'node:http'
import { Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox'
import { MAX_MESSAGE_CHARS } from './error-body.js'
import { MAX_FIELD_CHARS, MAX_ISSUE_MESSAGE_CHARS, MAX_ISSUES } from './validation-issues.js'
import { MAX_INSTANCE_CHARS, PROBLEM_TYPE_PREFIX, problemDetails } from './problem-details.js'

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

export const ValidationIssue = Type.Object({
  field: Type.String({
    maxLength: MAX_FIELD_CHARS,
    description: `Where the value is, e.g. body.age or params.id; a longer name keeps its start and end around "…" (${MAX_FIELD_CHARS} characters in all)`
  }),
  message: Type.String({ maxLength: MAX_ISSUE_MESSAGE_CHARS, description: 'Why it was rejected' })
}, { $id: schemaId('ValidationIssue'), description: 'One field that failed validation' })
export type ValidationIssue = Static<typeof ValidationIssue>

/** What both shapes of an error carry: the stable code, and the failing fields of a validation error. */
const errorCodeAndIssues = {
  code: Type.String({ description: 'Stable error code (listed in docs/errors.md)' }),
  validation: Type.Optional(Type.Array(ref(ValidationIssue), {
    maxItems: MAX_ISSUES,
    description: `One entry for each failing field, the first ${MAX_ISSUES} found`
  }))
}

/** The one error shape of the service. */
export const ErrorReply = Type.Object({
  statusCode: Type.Integer({ description: 'The HTTP status' }),
  error: Type.String({ description: 'HTTP reason phrase' }),
  message: Type.String({ maxLength: MAX_MESSAGE_CHARS, description: 'What went wrong, for people; branch on `code`' }),
  ...errorCodeAndIssues
}, { $id: schemaId('Error'), description: 'The error body of every failed request' })
export type ErrorReply = Static<typeof ErrorReply>

/**
 * The same error as RFC 9457 Problem Details, sent instead of `Error` to a client that prefers
 * `application/problem+json` (see `src/http/problem-details.ts`).
 */
export const ProblemDetails = Type.Object({
  type: Type.String({
    format: 'uri',
    description: `The problem type: \`${PROBLEM_TYPE_PREFIX}\` followed by \`code\`; a name to compare, not a link to follow`
  }),
  title: Type.String({ description: 'HTTP reason phrase' }),
  status: Type.Integer({ description: 'The HTTP status' }),
  detail: Type.String({ maxLength: MAX_MESSAGE_CHARS, description: 'What went wrong, for people; branch on `code` (or `type`)' }),
  instance: Type.String({
    maxLength: MAX_INSTANCE_CHARS,
    description: `The path of the request as sent, without its query; a longer one keeps its start and end around "…" (${MAX_INSTANCE_CHARS} characters in all)`
  }),
  ...errorCodeAndIssues
}, { $id: schemaId('ProblemDetails'), description: 'The error body as RFC 9457 Problem Details, for a client whose Accept prefers application/problem+json' })
export type ProblemDetails = Static<typeof ProblemDetails>

/** What an error response of one status documents: why it happens, and an example body with its code. */
export interface ErrorExample {
  code: string
  message: string
  validation?: ValidationIssue[]
}

/** What the Problem Details examples show as `instance`: each request has its own path there. */
const EXAMPLE_INSTANCE = '/path/of/the/request'

/**
 * The response schema of one error status: the shared error body with a real
 * description and examples of that status (never a 400 body under a 401),
 * in both of its media types.
 */
export function errorResponse (statusCode: number, description: string, examples: ErrorExample[]) {
  const error = String(STATUS_CODES[statusCode])
  const bodies = examples.map(({ code, message, validation }): ErrorReply =>
    validation === undefined ? { statusCode, error, message, code } : { statusCode, error, message, code, validation })
  return {
    description,
    content: {
      'application/json': {
        schema: ref(ErrorReply),
        examples: Object.fromEntries(bodies.map((body) => [body.code, { summary: body.message, value: body }]))
      },
      'application/problem+json': {
        schema: ref(ProblemDetails),
        examples: Object.fromEntries(bodies.map((body) => [body.code, { summary: body.message, value: problemDetails(body, EXAMPLE_INSTANCE) }]))
      }
    }
  }
}

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
