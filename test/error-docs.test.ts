import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ERRORS_PAGE, renderErrorTable, updateErrorTable } from '../src/error-docs.js'
import { errorEntries, errorEntry, retryAfterFor } from '../src/errors.js'
import * as responses from '../src/http/error-response-schemas.js'
import { build } from './support/app.js'

const root = join(import.meta.dirname, '..')

interface Example { value: { statusCode: number, code: string, message: string } }
interface Documented { description: string, content: Record<string, { examples: Record<string, Example> }> }

t.test("the error codes page's table is the one generated from src/errors.ts", async (t) => {
  t.equal(ERRORS_PAGE, 'docs/errors.md')
  const page = readFileSync(join(root, ERRORS_PAGE), 'utf8')
  t.equal(updateErrorTable(page), page, `${ERRORS_PAGE} is out of date: run \`npm run errors\` and commit the result`)
  t.throws(() => updateErrorTable('# No table here\n'), /^docs\/errors\.md needs the markers <!-- errors:start --> and <!-- errors:end -->/)
})

t.test('one row per code, each with its status, when it happens and its message', async (t) => {
  const entries = errorEntries()
  t.ok(entries.length >= 30, `${entries.length} codes`)
  t.equal(new Set(entries.map(({ code }) => code)).size, entries.length, 'no code twice')
  const rows = renderErrorTable().split('\n').slice(2)
  t.equal(rows.length, entries.length)
  for (const [index, { code, statusCode, when, message }] of entries.entries()) {
    t.match(code, /^(FST|HTTP|AUTH|CATS)_ERR_[A-Z_]+$/, code)
    t.ok(statusCode >= 400 && statusCode <= 599, `${code} ${statusCode}`)
    t.match(when, /^[^\n]{10,}$/, `${code} says when`)
    t.ok(rows[index].startsWith(`| \`${code}\` | ${statusCode} | `) && rows[index].endsWith(` | ${message} |`), code)
  }
  t.throws(() => errorEntry('CATS_ERR_NO_SUCH_THING'), /CATS_ERR_NO_SUCH_THING is not in src\/errors\.ts/)
})

t.test('a Retry-After is written with its code and documented with it', async (t) => {
  for (const { code, when, retryAfterSeconds } of errorEntries()) {
    t.equal(retryAfterFor(code), retryAfterSeconds, code)
    if (retryAfterSeconds !== undefined) t.match(when, /Retry-After/, `${code} tells of its Retry-After`)
  }
})

t.test('every documented error response is built from the codes of its own status, described by their "when"', async (t) => {
  const built = Object.entries(responses).flatMap(([name, response]) => typeof response === 'object' ? [{ name, response }] : [])
  t.ok(built.length >= 15)
  for (const { name, response } of built) {
    for (const { value } of Object.values(response.content['application/json'].examples)) {
      const entry = errorEntry(value.code)
      t.equal(value.statusCode, entry.statusCode, `${name}: ${value.code} has its own status`)
      t.ok(response.description.includes(entry.when.replace(/\[([^\]]+)\]\([^)]+\)/g, '$1')), `${name} says when ${value.code} happens`)
    }
  }
})

t.test("every error example of the service's OpenAPI document is a code of src/errors.ts under its status", async (t) => {
  const app = await build(t, { REFRESH_TOKENS: true })
  const doc = (await app.inject('/docs/json')).json<{ paths: Record<string, Record<string, { responses: Record<string, Documented> }>> }>()
  let checked = 0
  for (const operations of Object.values(doc.paths)) {
    for (const { responses: documented } of Object.values(operations)) {
      for (const [status, response] of Object.entries(documented)) {
        for (const { value } of Object.values(response.content?.['application/json']?.examples ?? {})) {
          if (Number(status) < 400) continue
          t.equal(errorEntry(value.code).statusCode, Number(status), `${value.code} under ${status}`)
          checked++
        }
      }
    }
  }
  t.ok(checked > 40, `${checked} examples`)
})
