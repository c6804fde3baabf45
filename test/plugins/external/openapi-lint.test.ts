import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import Fastify from 'fastify'
import serviceApp from '../../../src/app.js'
import type { ConfigInput } from '../../../src/config.js'
import { testConfig } from '../../support/app.js'
import { plainNode } from '../../support/server.js'

const root = join(import.meta.dirname, '..', '..', '..')
const redocly = join(root, 'node_modules', '.bin', 'redocly')

interface LintReport {
  totals: { errors: number, warnings: number, ignored: number }
  problems: Array<{ ruleId: string, message: string }>
}

/** The document exactly as a client downloads it from /docs/json. */
async function documentOf (config: Partial<ConfigInput>, prefix?: string): Promise<unknown> {
  const app = Fastify()
  try {
    await app.register(serviceApp, { prefix, config: { ...testConfig, ...config } })
    const res = await app.inject(`${prefix ?? ''}/docs/json`)
    return res.json()
  } finally {
    await app.close()
  }
}

/** The CLI's JSON report of each file, in the order given, from one run of it. */
async function lint (files: string[]): Promise<LintReport[]> {
  // Telemetry and the update check are off: the test talks to no one. The CLI runs without tap's process-info
  // loader, which would follow each of its modules.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
  const [command, args] = plainNode(redocly)
  let stdout: string
  try {
    ({ stdout } = await promisify(execFile)(command, [...args, 'lint', '--config', join(root, 'redocly.yaml'), '--format', 'json', ...files], {
      env, timeout: 120_000
    }))
  } catch (error) {
    // It exits 1 when a document has errors: the reports still say which.
    if (typeof error !== 'object' || error === null || !('stdout' in error) || typeof error.stdout !== 'string' || error.stdout === '') throw error
    stdout = error.stdout
  }
  // The reports follow each other as indented JSON objects: only a report's own braces start a line.
  return JSON.parse(`[${stdout.replaceAll(/^\}\s*\{$/gm, '},{')}]`) as LintReport[]
}

const setups: Array<[string, Partial<ConfigInput>, string | undefined]> = [
  ['standalone', {}, undefined],
  ['CATS_AUTH=required', { CATS_AUTH: 'required' }, undefined],
  ['under the prefix /api', {}, '/api']
]

// One run of the CLI for the three documents.
const dir = t.testdir()
const files = await Promise.all(setups.map(async ([, config, prefix], index) => {
  const file = join(dir, `openapi-${index}.json`)
  await writeFile(file, JSON.stringify(await documentOf(config, prefix)))
  return file
}))
const reports = await lint(files)
t.equal(reports.length, setups.length, 'one report per document')

for (const [index, [name]] of setups.entries()) {
  t.test(`@redocly/cli lint (recommended rules, redocly.yaml): no errors or warnings, ${name}`, async (t) => {
    const report = reports[index]
    t.strictSame(report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`), [])
    t.strictSame(report.totals, { errors: 0, warnings: 0, ignored: 0 })
  })
}
