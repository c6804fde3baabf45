import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { baseEnv, plainNode } from './server.js'

/** Runs a compiled CLI command (dist/src/cli/<file>) with `stdin` as its input and only the given environment. */
export async function runCli (file: string, args: string[], stdin: string, env: Record<string, string> = {}, cwd?: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(...plainNode(join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', file), ...args), { env: { ...baseEnv, ...env }, cwd })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => { stdout += String(chunk) })
  child.stderr.on('data', (chunk) => { stderr += String(chunk) })
  child.stdin.end(stdin)
  const [code] = await once(child, 'exit')
  return { code, stdout, stderr }
}
