import { readFileSync, writeFileSync } from 'node:fs'
import { ERRORS_PAGE, updateErrorTable } from '../error-docs.js'

// Writes the table of error codes of docs/errors.md, in the working directory, from src/errors.ts.
writeFileSync(ERRORS_PAGE, updateErrorTable(readFileSync(ERRORS_PAGE, 'utf8')))
console.log(`Wrote the table of error codes in ${ERRORS_PAGE}`)
