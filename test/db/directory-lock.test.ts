import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, readFileSync, utimesSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { lockDirectory, processIdentity, DirectoryInUseError } from '../../src/db/directory-lock.js'
import { pgliteClient } from '../../src/db/sql-client.js'
import { TEST_SECRET } from '../support/app.js'
import { baseEnv, fetchKeepAlive, plainNode, serverFile } from '../support/server.js'
import { pgliteMigratedCopy } from '../support/pglite-template.js'

// One PGlite owner per directory: a second opener is refused, a dead owner (even one
// killed with SIGKILL, or whose PID was recycled) never blocks the next one.

const LOCK = 'cats-api.lock'

/** A PID that no process has: a child that has exited (`node -e ''`, without tap's loader, which would take longer than the rest). */
async function deadPid (): Promise<number> {
  const child = spawn(...plainNode('-e', ''))
  await once(child, 'exit')
  return child.pid ?? 0
}

t.test('a second lock of a directory in use is refused, naming the owner; release frees it', async (t) => {
  const dir = join(t.testdir(), 'db')
  const lock = await lockDirectory(dir)
  t.equal(readFileSync(join(dir, LOCK), 'utf8'), processIdentity(process.pid))
  await t.rejects(lockDirectory(dir), new DirectoryInUseError(`The PGlite directory ${dir} is in use by process ${process.pid}; only one process at a time may open it`))
  await lock.release()
  t.notOk(existsSync(join(dir, LOCK)))
  const again = await lockDirectory(dir)
  await again.release()
})

t.test('a stale lock is taken over: dead owner, recycled PID, garbage', async (t) => {
  const dir = t.testdir()
  const own = processIdentity(process.pid) ?? ''
  for (const stale of [`${await deadPid()} x:1`, own.replace(/:\d+$/, ':1'), 'not a pid']) {
    writeFileSync(join(dir, LOCK), stale)
    const lock = await lockDirectory(dir)
    t.equal(readFileSync(join(dir, LOCK), 'utf8'), own, `taken over from "${stale}"`)
    await lock.release()
  }
  t.equal(processIdentity(await deadPid()), undefined, 'no identity for a PID without a process')
})

t.test('a lock being written (empty file) counts as held', async (t) => {
  const dir = t.testdir()
  writeFileSync(join(dir, LOCK), '')
  await t.rejects(lockDirectory(dir), { message: /is in use by another process/ })
})

t.test('release leaves a lock that another process took meanwhile', async (t) => {
  const dir = t.testdir()
  const lock = await lockDirectory(dir)
  writeFileSync(join(dir, LOCK), 'someone else')
  await lock.release()
  t.equal(readFileSync(join(dir, LOCK), 'utf8'), 'someone else')
  const second = await lockDirectory(t.testdir())
  await second.release()
  await second.release()
  t.pass('releasing a lock already gone is fine')
})

t.test('a takeover in progress elsewhere is waited for; one left by a crash long ago is cleared', async (t) => {
  const dir = t.testdir()
  writeFileSync(join(dir, LOCK), `${await deadPid()} x:1`)
  mkdirSync(join(dir, `${LOCK}.takeover`))
  await t.rejects(lockDirectory(dir), { message: /is being taken over by another process/ })
  const longAgo = new Date(Date.now() - 60_000)
  utimesSync(join(dir, `${LOCK}.takeover`), longAgo, longAgo)
  const lock = await lockDirectory(dir)
  t.notOk(existsSync(join(dir, `${LOCK}.takeover`)))
  await lock.release()
})

t.test('a lock path that cannot be read is an error, not a takeover', async (t) => {
  const dir = t.testdir()
  mkdirSync(join(dir, LOCK))
  await t.rejects(lockDirectory(dir), { code: 'EISDIR' })
})

t.test('a lock file that cannot be created for another reason than a holder (a path too long) is an error', async (t) => {
  // The directory's path is as long as Linux allows (4095 bytes); its lock file's path is then too long to open.
  const base = t.testdir()
  const room = 4095 - base.length
  const parts = Array.from({ length: Math.ceil(room / 201) }, () => 'd'.repeat(200))
  const dir = `${base}/${parts.join('/')}`.slice(0, 4095).replace(/\/$/, 'd')
  await t.rejects(lockDirectory(dir), { code: 'ENAMETOOLONG', syscall: 'open' }, 'the directory was made; opening its lock file failed')
})

t.test('pgliteClient: holds the lock while open, and releases it when PGlite cannot open the directory', async (t) => {
  const dir = t.testdir({ PG_VERSION: '9\n' })
  await t.rejects(pgliteClient(dir))
  t.notOk(existsSync(join(dir, LOCK)), 'the lock was released')
})

interface Started { pid: number, code: Promise<number | null>, output: () => string, base: Promise<string> }

/**
 * The compiled server on `dir`, run as `npm start` runs it (without tap's loader). fetch leaves it no idle
 * keep-alive connection, so a SIGTERM stops it without waiting for one to close.
 */
function startServer (dir: string): Started {
  const child = spawn(...plainNode(serverFile), {
    env: { ...baseEnv, JWT_SECRET: TEST_SECRET, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `pglite://${dir}`, ...fetchKeepAlive.none }
  })
  let output = ''
  child.stderr.on('data', (chunk) => { output += String(chunk) })
  const base = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += String(chunk)
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) resolve(match[1])
    })
    child.once('exit', () => reject(new Error(`exited: ${output}`)))
  })
  base.catch(() => {})
  return { pid: child.pid ?? 0, code: once(child, 'exit').then(() => child.exitCode), output: () => output, base }
}

function stop (t: Test, server: Started): void {
  t.teardown(() => {
    try {
      process.kill(server.pid, 'SIGKILL')
    } catch {}
  })
}

t.test('compiled servers: a second one on a directory in use exits 1 and never listens; after a SIGKILL of the first, a new one starts with the data', async (t) => {
  // A copy of a database with every migration applied: the first server would spend seconds creating one from
  // nothing, and migrating an empty one is not what this test is about.
  const dir = await pgliteMigratedCopy(t)
  const first = startServer(dir)
  stop(t, first)
  const base = await first.base
  const created = await fetch(`${base}/cats`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Tom","age":3,"breed":"Manx"}' })
  t.equal(created.status, 201)

  const second = startServer(dir)
  stop(t, second)
  t.equal(await second.code, 1, 'the second process exits 1')
  const refusal = `The PGlite directory ${dir} is in use by process ${first.pid}; only one process at a time may open it`
  t.ok(second.output().includes(refusal), 'with a clear message')
  t.comment(`refusal: ${refusal}`)
  t.notMatch(second.output(), /Server listening/, 'and never listened')

  process.kill(first.pid, 'SIGKILL')
  t.equal(await first.code, null, 'the first one is killed')
  const third = startServer(dir)
  stop(t, third)
  const list = await fetch(`${await third.base}/cats`)
  t.strictSame(await list.json(), [{ id: 1, name: 'Tom', age: 3, breed: 'Manx' }], 'the restarted server sees the acknowledged cat')
  process.kill(third.pid, 'SIGTERM')
  t.equal(await third.code, 0)
  t.notOk(existsSync(join(dir, LOCK)), 'a clean stop removes the lock')
})
