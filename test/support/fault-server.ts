import { once } from 'node:events'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { loadConfig } from '../../src/config.js'
import { hashPassword } from '../../src/auth/login/password.js'
import { TEST_SECRET } from './app.js'
import { startServer, type RunningServer } from './server.js'
import { exchange, head, jsonHead, parseJson, type HttpResponse } from './raw-http.js'
import { CHEAP_HASH } from './cheap-users.js'

// The fault tests (test/http/faults/) run over real sockets against one spawned compiled server per file:
// clients that vanish, lie about Content-Length, drip headers, send huge headers or bodies. The tests of
// a file share its server and run in order; each leaves the cat store empty.

export const HEADERS_TIMEOUT_MS = 1500
export const REQUEST_TIMEOUT_MS = 5000
/** The idle-socket timeout: longer than the others, so it never explains a close seen here. */
export const CONNECTION_TIMEOUT_MS = 15_000
/** Above Node's own 16 KiB default, so a 24 KB header proves the setting is applied. */
export const MAX_HEADER_BYTES = 32_768
/** The service's default BODY_LIMIT: it is not set here, so the default is what is tested. */
export const { BODY_LIMIT } = loadConfig({ JWT_SECRET: TEST_SECRET })
/** How often Node checks the header and request timeouts (src/http/server-options.ts). */
export const CHECK_INTERVAL_MS = 1000

export const TOM = '{"name":"Tom","age":3,"breed":"Siamese"}'

/**
 * john/changeme with a cheap hash: the logins here show that other requests are served while slow clients
 * hold connections, and the demo users' slow hashes, run below request priority, can take seconds on a
 * machine busy with the rest of the suite.
 */
async function cheapUsersFile (): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'faults-users-')), 'users.json')
  await writeFile(file, JSON.stringify([{ id: 1, username: 'john', passwordHash: await hashPassword('changeme', CHEAP_HASH) }]))
  return file
}

export interface FaultServer {
  child: RunningServer['child']
  port: number
  output: () => string
  /** One ordinary request on its own connection; exactly one response is expected. */
  request: (method: string, path: string, options?: { body?: string, headers?: Record<string, string> }) => Promise<HttpResponse>
  listCats: () => Promise<unknown>
  /** Deletes every stored cat (at most `max` of them), so each test starts and ends with an empty store. */
  clearCats: (max?: number) => Promise<void>
  assertHealthy: (t: Test, when: string) => Promise<void>
}

/** Starts the compiled server with the limits under test, killed when the file's tests end. */
export async function startFaultServer (t: Test): Promise<FaultServer> {
  const { child, base, output } = await startServer({
    USERS_FILE: await cheapUsersFile(),
    LOG_LEVEL: 'info',
    HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    CONNECTION_TIMEOUT_MS: String(CONNECTION_TIMEOUT_MS),
    MAX_HEADER_BYTES: String(MAX_HEADER_BYTES)
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const port = Number(new URL(base).port)

  const request: FaultServer['request'] = async (method, path, options = {}) => {
    const { body } = options
    const text = body === undefined
      ? head(method, path, options.headers)
      : jsonHead(method, path, Buffer.byteLength(body), options.headers) + body
    const result = await exchange(port, ({ socket }) => { socket.write(text) }, 10_000)
    const [response] = result.responses
    if (response === undefined || result.responses.length !== 1) {
      throw new Error(`expected one response to ${method} ${path}, got ${JSON.stringify(result.raw.slice(0, 300))} (${String(result.error)})`)
    }
    return response
  }

  const listCats = async (): Promise<unknown> => {
    const response = await request('GET', '/cats')
    if (response.status !== 200) throw new Error(`GET /cats answered ${response.status}`)
    return parseJson(response)
  }

  const clearCats = async (max = 20): Promise<void> => {
    for (let i = 0; i < max; i++) {
      const cats = await listCats()
      if (!Array.isArray(cats) || cats.length === 0) return
      const first: unknown = cats[0]
      const id = typeof first === 'object' && first !== null && 'id' in first ? String(first.id) : ''
      await request('DELETE', `/cats/${id}`)
    }
  }

  const assertHealthy = async (t: Test, when: string): Promise<void> => {
    t.ok(child.exitCode === null && child.signalCode === null, `the server process is still running ${when}`)
    const health = await request('GET', '/health')
    t.equal(health.status, 200, `GET /health answers 200 ${when}`)
    t.strictSame(parseJson(health), { status: 'ok' })
  }

  return { child, port, output, request, listCats, clearCats, assertHealthy }
}

/** The last test of each fault file: after all of its faults the server is alive, logged no errors, and exits 0 on SIGTERM. */
export function endsCleanly (t: Test, server: FaultServer): void {
  t.test('after all of the above the server is alive, logged no errors, and exits 0 on SIGTERM', async (t) => {
    await server.assertHealthy(t, 'at the end')
    t.notMatch(server.output(), /"level":(50|60)/, 'no error or fatal line was logged')
    const exited = once(server.child, 'exit')
    server.child.kill('SIGTERM')
    // Unref'd: a pending timer would keep the test process alive for its 8 s after the server has exited.
    const cap = sleep(8000, 'still running', { ref: false })
    const outcome = await Promise.race([exited, cap])
    t.strictSame(outcome, [0, null], 'exit code 0 after SIGTERM')
  })
}
