import type { FieldError } from '../http/validation-issues.js'

/** How deep a PUT body may nest; the body object itself is level 1. */
export const MAX_MERGE_DEPTH = 32
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor'])

const escapePointer = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1')

/**
 * Lists what makes a value unsafe to merge into a record: prototype-polluting
 * keys at any depth, and nesting deeper than MAX_MERGE_DEPTH levels.
 */
export function findMergeProblems (value: unknown): FieldError[] {
  const problems: FieldError[] = []
  const visit = (node: unknown, path: string, level: number): void => {
    if (typeof node !== 'object' || node === null) return
    if (level > MAX_MERGE_DEPTH) {
      problems.push({ instancePath: path, message: `must not be nested deeper than ${MAX_MERGE_DEPTH} levels` })
      return
    }
    for (const [key, child] of Object.entries(node)) {
      // The pointer is built only where it may be needed: most values merged are not objects.
      if (FORBIDDEN_KEYS.has(key)) problems.push({ instancePath: `${path}/${escapePointer(key)}`, message: `uses the reserved key "${key}"` })
      else if (typeof child === 'object' && child !== null) visit(child, `${path}/${escapePointer(key)}`, level + 1)
    }
  }
  visit(value, '', 1)
  return problems
}
