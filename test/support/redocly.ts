import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { plainNode } from './server.js'

const root = join(import.meta.dirname, '..', '..')
const redocly = join(root, 'node_modules', '.bin', 'redocly')

/** The repository's Redocly configuration: the recommended rules, less one (see the file). */
export const REPOSITORY_CONFIG = join(root, 'redocly.yaml')

export interface LintReport {
  totals: { errors: number, warnings: number, ignored: number }
  problems: Array<{ ruleId: string, message: string }>
}

/** The CLI's JSON report of each file, in the order given, from one run of it with the configuration `config`. */
export async function lint (files: string[], config = REPOSITORY_CONFIG): Promise<LintReport[]> {
  // Telemetry and the update check are off: the test talks to no one. The CLI runs without tap's process-info
  // loader, which would follow each of its modules.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
  const [command, args] = plainNode(redocly)
  let stdout: string
  try {
    ({ stdout } = await promisify(execFile)(command, [...args, 'lint', '--config', config, '--format', 'json', ...files], {
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
