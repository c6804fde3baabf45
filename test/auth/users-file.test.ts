import t, { type Test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HashQueue } from '../../src/auth/login/hash-queue.js'
import { deriveOnThreadPool, hashPassword, type ScryptParams } from '../../src/auth/login/password.js'
import { loadUsersFile, type UserRecord } from '../../src/auth/login/users-file.js'
import { UserStore } from '../../src/auth/login/users.js'

const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }
const aliceHash = await hashPassword('alice-password', FAST)
const alice: UserRecord = { id: 1, username: 'alice', passwordHash: aliceHash }
const bob: UserRecord = { id: '1', username: 'bob', passwordHash: await hashPassword('bob-password', FAST) }
const newQueue = (): HashQueue => new HashQueue(2, 100, 60_000, { whenFull: () => new Error('hash queue full'), whenLate: () => new Error('late'), whenAbandoned: () => new Error('abandoned') })

function tempDir (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'users-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Writes `content` to a file in a fresh temp directory and returns its path. */
function tempFile (t: Test, content: string): string {
  const path = join(tempDir(t), 'users.json')
  writeFileSync(path, content)
  return path
}

/** Calls loadUsersFile and returns the message it throws, failing when it does not throw. */
function loadError (path: string): string {
  try {
    loadUsersFile(path)
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
  throw new Error(`loadUsersFile accepted ${path}`)
}

t.test('loadUsersFile accepts a valid file', async (t) => {
  const users = [alice, bob, { id: 'uuid-42', username: 'carol', passwordHash: aliceHash }]
  const path = tempFile(t, JSON.stringify(users, null, 2))
  const loaded = loadUsersFile(path)
  t.strictSame(loaded, users)
  const store = new UserStore(loaded, newQueue(), deriveOnThreadPool)
  t.equal((await store.verifyCredentials('alice', 'alice-password'))?.id, 1)
  t.equal(store.findById('uuid-42')?.username, 'carol')
})

t.test('loadUsersFile accepts an empty array', async (t) => {
  t.strictSame(loadUsersFile(tempFile(t, '[]')), [])
})

t.test('loadUsersFile rejects a missing file, naming it', async (t) => {
  const path = join(tempDir(t), 'does-not-exist.json')
  const message = loadError(path)
  t.ok(message.startsWith(`USERS_FILE ${path}`), message)
  t.match(message, /ENOENT/)
})

t.test('loadUsersFile rejects a directory', async (t) => {
  const dir = tempDir(t)
  t.ok(loadError(dir).startsWith(`USERS_FILE ${dir}`))
})

t.test('loadUsersFile rejects invalid JSON, naming the file', async (t) => {
  for (const content of ['', '{', '[{"id": 1,}]', 'users: []']) {
    const path = tempFile(t, content)
    const message = loadError(path)
    t.ok(message.startsWith(`USERS_FILE ${path}: SyntaxError`), message)
  }
})

t.test('loadUsersFile rejects a file that is not an array', async (t) => {
  for (const content of ['{}', JSON.stringify({ users: [alice] }), '"alice"', 'null', '42']) {
    const path = tempFile(t, content)
    const message = loadError(path)
    t.ok(message.startsWith(`USERS_FILE ${path}: / `), message)
    t.match(message, /expected an array of \{ id, username, passwordHash \}$/)
  }
})

t.test('loadUsersFile rejects an entry missing passwordHash, naming where', async (t) => {
  const path = tempFile(t, JSON.stringify([alice, { id: 2, username: 'nohash' }]))
  const message = loadError(path)
  t.ok(message.startsWith(`USERS_FILE ${path}: /1`), message)
  t.match(message, /passwordHash/)
})

t.test('loadUsersFile rejects other bad entries', async (t) => {
  const cases: Record<string, unknown[]> = {
    'missing id': [{ username: 'x', passwordHash: aliceHash }],
    'missing username': [{ id: 1, passwordHash: aliceHash }],
    'empty username': [{ id: 1, username: '', passwordHash: aliceHash }],
    'id of the wrong type': [{ id: true, username: 'x', passwordHash: aliceHash }],
    'fractional id': [{ id: 1.5, username: 'x', passwordHash: aliceHash }],
    'empty string id': [{ id: '', username: 'x', passwordHash: aliceHash }],
    'hash of the wrong type': [{ id: 1, username: 'x', passwordHash: 42 }],
    'an entry that is not an object': [alice, 'bob']
  }
  for (const [name, users] of Object.entries(cases)) {
    const path = tempFile(t, JSON.stringify(users))
    const message = loadError(path)
    t.ok(message.startsWith(`USERS_FILE ${path}: /`), `${name}: ${message}`)
  }
})
