import { replaceTable } from './docs-table.js'
import { errorEntries } from './errors.js'

/** The page, relative to the project root, the table of error codes lives on (`npm run errors` writes it). */
export const ERRORS_PAGE = 'docs/errors.md'

/** The table of error codes, one row each, from src/errors.ts. */
export function renderErrorTable (): string {
  const cell = (text: string): string => text.replaceAll('|', '\\|')
  const rows = errorEntries().map(({ code, statusCode, message, when }) => `| \`${code}\` | ${statusCode} | ${cell(when)} | ${cell(message)} |`)
  return ['| Code | Status | When | Message (`%s`: filled in per case) |', '|---|---|---|---|', ...rows].join('\n')
}

/** The page with its table of error codes replaced by the current one. */
export function updateErrorTable (page: string): string {
  return replaceTable(page, ERRORS_PAGE, 'errors', renderErrorTable())
}
