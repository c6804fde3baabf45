import { InvalidRequest } from './errors.js'
import type { ValidationIssue } from './schemas.js'

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

/** One entry per failing field, as the error body lists them. */
export function toIssues (context: string, errors: readonly FieldError[]): ValidationIssue[] {
  return errors.map((error) => ({ field: fieldName(context, error), message: error.message ?? 'is invalid' }))
}

/** A 400 in the same shape as a schema validation failure, for checks a schema cannot express. */
export function invalidRequest (context: string, errors: FieldError[]): InstanceType<typeof InvalidRequest> {
  const message = toIssues(context, errors).map((issue) => `${issue.field} ${issue.message}`).join(', ')
  return Object.assign(new InvalidRequest(message), { validation: errors, validationContext: context })
}
