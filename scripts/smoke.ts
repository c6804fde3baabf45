/**
 * A smoke run of the compiled server (`npm start`, from `npm run build`) on the Node.js that runs this script:
 * it starts dist/server/src/server.js on 127.0.0.1 and a port the system picks, with a random JWT_SECRET and
 * the demo users, waits until it is ready, logs in as john, reads the profile, creates a cat and reads it back,
 * then stops the server with SIGTERM and expects it to exit with 0. Exits non-zero, naming the step, otherwise.
 *   npx tsx scripts/smoke.ts
 * CI runs it on Node.js 22 (.ci/run): `PATH="$(dirname "$(scripts/node-runtime.sh 22)"):$PATH" npx tsx scripts/smoke.ts`.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

const serverFile = join(import.meta.dirname, '..', 'dist', 'server', 'src', 'server.js')
/** Longest wait for the server to listen and be ready, and for it to exit after SIGTERM. */
const WAIT_MS = 30_000

/** Throws with `message` and the response's status and body unless the status is `expected`. */
async function expectStatus (response: Response, expected: number, message: string): Promise<unknown> {
  const text = await response.text()
  if (response.status !== expected) throw new Error(`${message}: ${response.status} ${text}`)
  return text === '' ? undefined : JSON.parse(text)
}

function check (condition: boolean, message: string): void {
  if (!condition) throw new Error(message)
}

// A working directory of its own: the server reads a .env file from it, and this one has none.
const cwd = mkdtempSync(join(tmpdir(), 'smoke-'))
const env = { PATH: process.env.PATH, JWT_SECRET: randomBytes(32).toString('hex'), HOST: '127.0.0.1', PORT: '0' }
const server = spawn(process.execPath, [serverFile], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
let output = ''
server.stdout.on('data', (chunk) => { output += String(chunk) })
server.stderr.on('data', (chunk) => { output += String(chunk) })
const exited = once(server, 'exit') as Promise<[number | null, NodeJS.Signals | null]>

try {
  const base = await Promise.race([
    (async () => {
      for (const started = Date.now(); Date.now() - started < WAIT_MS; await sleep(50)) {
        const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
        if (match !== null) return match[1]
      }
      throw new Error(`the server did not listen within ${WAIT_MS} ms`)
    })(),
    exited.then(([code, signal]) => { throw new Error(`the server exited early (${String(code ?? signal)})`) })
  ])

  for (const started = Date.now(); ; await sleep(100)) {
    const ready = await fetch(`${base}/health/ready`)
    await ready.body?.cancel()
    if (ready.status === 200) break
    check(Date.now() - started < WAIT_MS, `GET /health/ready: still ${ready.status} after ${WAIT_MS} ms`)
  }

  const login = await expectStatus(await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'john', password: 'changeme' })
  }), 200, 'POST /auth/login as john') as { access_token?: unknown }
  check(typeof login.access_token === 'string', 'POST /auth/login: no access_token')
  const authorization = `Bearer ${String(login.access_token)}`

  const profile = await expectStatus(await fetch(`${base}/profile`, { headers: { authorization } }), 200, 'GET /profile') as { username?: unknown }
  check(profile.username === 'john', `GET /profile: ${JSON.stringify(profile)}`)

  const cat = { name: 'Smoke', age: 3, breed: 'Siamese' }
  const created = await expectStatus(await fetch(`${base}/cats`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify(cat)
  }), 201, 'POST /cats') as { id?: unknown }
  check(typeof created.id === 'number', `POST /cats: ${JSON.stringify(created)}`)
  const read = await expectStatus(await fetch(`${base}/cats/${String(created.id)}`), 200, 'GET /cats/:id')
  check(JSON.stringify(read) === JSON.stringify({ id: created.id, ...cat }), `GET /cats/${String(created.id)}: ${JSON.stringify(read)}`)

  server.kill('SIGTERM')
  const [code, signal] = await Promise.race([exited, sleep(WAIT_MS).then(() => [null, 'timeout'] as const)])
  check(code === 0, `after SIGTERM the server exited with ${String(code ?? signal)}`)
  console.log(`smoke: the compiled server works on Node.js ${process.version} (login, profile, a cat created and read, SIGTERM exit 0)`)
} catch (error) {
  server.kill('SIGKILL')
  console.error(`smoke on Node.js ${process.version} failed: ${error instanceof Error ? error.message : String(error)}\n--- server output ---\n${output}`)
  process.exitCode = 1
} finally {
  rmSync(cwd, { recursive: true, force: true })
}
