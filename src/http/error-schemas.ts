import { Type, type Static } from '@sinclair/typebox'
import { MAX_FIELD_CHARS, MAX_INSTANCE_CHARS, MAX_ISSUE_MESSAGE_CHARS, MAX_ISSUES, MAX_MESSAGE_CHARS, PROBLEM_TYPE_PREFIX } from './error-limits.js'
import { ref, schemaId } from './schemas.js'

/** The shapes of an error answer: the service's own body, and the same as Problem Details. */

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
