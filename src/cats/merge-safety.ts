import { type FieldError } from '../http/validation-issues.js'
import { MAX_ISSUES } from '../http/error-limits.js'

/** How deep a PUT body may nest; the body object itself is level 1. */
export const MAX_MERGE_DEPTH = 32
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor'])

const escapePointer = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1')
const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null

/**
 * Lists what makes a value unsafe to merge into a record: prototype-polluting
 * keys at any depth, and nesting deeper than MAX_MERGE_DEPTH levels. The walk
 * stops at the first `limit` problems (as many as an error body lists): a hostile
 * body may have a problem at each of its thousands of nodes. It is linear in the
 * size of the body and allocates little, as a body may be up to a megabyte of nodes.
 */
export function findMergeProblems (value: unknown, limit = MAX_ISSUES): FieldError[] {
  const problems: FieldError[] = []
  // The keys from the body down to the node being visited: a JSON pointer is built only for a problem.
  const keys: string[] = []
  const report = (message: string): void => {
    problems.push({ instancePath: keys.map((key) => `/${escapePointer(key)}`).join(''), message })
  }
  const visitChild = (key: string, child: object, level: number): void => {
    keys.push(key)
    visit(child, level)
    keys.pop()
  }
  const visit = (node: object, level: number): void => {
    if (level > MAX_MERGE_DEPTH) {
      report(`must not be nested deeper than ${MAX_MERGE_DEPTH} levels`)
      return
    }
    // An array's keys are indexes, never a reserved key: only its elements are searched.
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length && problems.length < limit; index++) {
        const child: unknown = node[index]
        if (isObject(child)) visitChild(String(index), child, level + 1)
      }
      return
    }
    for (const key of Object.keys(node)) {
      if (problems.length >= limit) return
      const child: unknown = Reflect.get(node, key)
      if (FORBIDDEN_KEYS.has(key)) {
        keys.push(key)
        report(`uses the reserved key "${key}"`)
        keys.pop()
      } else if (isObject(child)) {
        visitChild(key, child, level + 1)
      }
    }
  }
  if (isObject(value)) visit(value, 1)
  return problems
}
