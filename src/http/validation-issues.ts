import { InvalidRequest } from '../errors.js'
import { shorten } from './error-body.js'
import { MAX_FIELD_CHARS, MAX_ISSUE_MESSAGE_CHARS, MAX_ISSUES, MAX_MESSAGE_CHARS } from './error-limits.js'
import type { ValidationIssue } from './error-schemas.js'

/** The subset of an Ajv error that names a failing field and why. */
export interface FieldError {
  instancePath: string
  message?: string
  params?: Record<string, unknown>
}

function unescapePointer (segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~')
}

/** `body.a.b` from the context and a JSON-pointer path, plus the missing property when there is one. */
function fieldName (context: string, error: FieldError): string {
  const path = error.instancePath.split('/').slice(1).map(unescapePointer)
  const missing = error.params?.missingProperty
  if (typeof missing === 'string') path.push(missing)
  return [context, ...path].join('.')
}

/** One entry per failing field, as the error body lists them: the first MAX_ISSUES, names and messages shortened. */
export function toIssues (context: string, errors: readonly FieldError[]): ValidationIssue[] {
  return errors.slice(0, MAX_ISSUES).map((error) => ({
    field: shorten(fieldName(context, error), MAX_FIELD_CHARS),
    message: shorten(error.message ?? 'is invalid', MAX_ISSUE_MESSAGE_CHARS)
  }))
}

// Ends a message that lists only the first issues; `validation` has the rest, up to MAX_ISSUES.
const MORE = ', …'

/** The issues in one line: as many whole ones as fit in MAX_MESSAGE_CHARS (the first one always does). */
function summary (issues: readonly ValidationIssue[]): string {
  let text = ''
  for (const { field, message } of issues) {
    const next = `${text === '' ? '' : ', '}${field} ${message}`
    if (text.length + next.length > MAX_MESSAGE_CHARS - MORE.length) return text + MORE
    text += next
  }
  return text
}

/** A 400 in the same shape as a schema validation failure, for checks a schema cannot express. */
export function invalidRequest (context: string, errors: FieldError[]): InstanceType<typeof InvalidRequest> {
  return Object.assign(new InvalidRequest(summary(toIssues(context, errors))), { validation: errors, validationContext: context })
}
