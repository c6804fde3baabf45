import t, { type Test } from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BoundedQueue } from '../../src/auth/hash-queue.js'
import { DEMO_USERS } from '../../src/auth/demo-users.js'
import { DEFAULT_SCRYPT_PARAMS, hashPassword, parseHash, verifyPassword, type ScryptParams } from '../../src/auth/password.js'
import { UserStore, loadUsersFile, type UserRecord } from '../../src/auth/users.js'

const FAST: ScryptParams = { ln: 10, r: 8, p: 1 }

const newQueue = (): BoundedQueue => new BoundedQueue(2, 100, () => new Error('hash queue full'))

/** Hashes with cheap parameters, once for the whole file. */
const aliceHash = await hashPassword('alice-password', FAST)
const bobHash = await hashPassword('bob-password', FAST)
const alice: UserRecord = { id: 1, username: 'alice', passwordHash: aliceHash }
const bob: UserRecord = { id: '1', username: 'bob', passwordHash: bobHash }

/** A fresh temp directory, removed when the test ends. */
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

t.test('UserStore: construction accepts distinct users', async (t) => {
  const store = new UserStore([alice, bob], newQueue())
  t.equal(store.findById(1), alice)
  t.equal(store.findById('1'), bob)
  t.equal(new UserStore([], newQueue()).findById(1), undefined, 'an empty store is fine')
})

t.test('UserStore: construction rejects duplicate ids', async (t) => {
  t.throws(() => new UserStore([alice, { ...bob, id: 1 }], newQueue()), { message: 'duplicate user id 1' })
  t.throws(() => new UserStore([bob, { ...alice, id: '1' }], newQueue()), { message: 'duplicate user id "1"' })
})

t.test('UserStore: construction rejects duplicate usernames', async (t) => {
  t.throws(() => new UserStore([alice, { ...bob, username: 'alice' }], newQueue()), { message: 'duplicate username "alice"' })
})

t.test('R2: UserStore construction rejects an invalid hash', async (t) => {
  for (const passwordHash of ['', 'alice-password', aliceHash.replace('ln=10', 'ln=21'), aliceHash.slice(0, 30)]) {
    t.throws(() => new UserStore([alice, { ...bob, passwordHash }], newQueue()), {
      message: 'user "bob" has an invalid passwordHash'
    }, JSON.stringify(passwordHash))
  }
})

t.test('D6: findById distinguishes 1 from "1"', async (t) => {
  const onlyNumber = new UserStore([alice], newQueue())
  t.equal(onlyNumber.findById(1), alice)
  t.equal(onlyNumber.findById('1'), undefined, 'the string "1" is another id')
  const onlyString = new UserStore([bob], newQueue())
  t.equal(onlyString.findById('1'), bob)
  t.equal(onlyString.findById(1), undefined, 'the number 1 is another id')
  t.equal(onlyString.findById(2), undefined)
})

t.test('verifyCredentials: the right password returns the user', async (t) => {
  const store = new UserStore([alice, bob], newQueue())
  t.equal(await store.verifyCredentials('alice', 'alice-password'), alice)
  t.equal(await store.verifyCredentials('bob', 'bob-password'), bob)
})

t.test('D3: verifyCredentials: a wrong password returns undefined', async (t) => {
  const store = new UserStore([alice, bob], newQueue())
  t.equal(await store.verifyCredentials('alice', 'bob-password'), undefined, 'another user\'s password')
  t.equal(await store.verifyCredentials('alice', 'Alice-password'), undefined)
  t.equal(await store.verifyCredentials('alice', ''), undefined)
  t.equal(await store.verifyCredentials('ALICE', 'alice-password'), undefined, 'usernames are case-sensitive')
})

t.test('D3: verifyCredentials: an unknown username returns undefined, after a hash through the queue', async (t) => {
  const queue = newQueue()
  const store = new UserStore([alice], queue)
  const pending = store.verifyCredentials('nobody', 'alice-password')
  t.equal(queue.running, 1, 'the unknown user still costs a hash verification in the queue')
  t.equal(await pending, undefined)
  t.equal(queue.running, 0)
  t.equal(await new UserStore([], queue).verifyCredentials('', ''), undefined, 'an empty store')
})

t.test('D3: an unknown username is verified against a valid dummy hash as costly as a real one', async (t) => {
  const checked: string[] = []
  const users = await t.mockImport<typeof import('../../src/auth/users.js')>('../../src/auth/users.js', {
    '../../src/auth/password.js': {
      parseHash,
      verifyPassword: async (password: string, encoded: string): Promise<boolean> => {
        checked.push(encoded)
        return verifyPassword(password, encoded)
      }
    }
  })
  const store = new users.UserStore([alice], newQueue())
  t.equal(await store.verifyCredentials('nobody', 'alice-password'), undefined)
  t.equal(checked.length, 1, 'one hash verification for the unknown user')
  t.not(checked[0], aliceHash)
  t.strictSame(parseHash(checked[0])?.params, DEFAULT_SCRYPT_PARAMS, 'a well-formed hash with the default (production) cost')

  t.equal(await store.verifyCredentials('alice', 'wrong'), undefined)
  t.strictSame(checked, [checked[0], aliceHash], 'a known user is verified against their own hash')
})

t.test('verifyCredentials runs hashes through the given queue and its limit', async (t) => {
  const queue = new BoundedQueue(1, 0, () => new Error('hash queue full'))
  const store = new UserStore([alice], queue)
  const first = store.verifyCredentials('alice', 'alice-password')
  await t.rejects(store.verifyCredentials('alice', 'alice-password'), { message: 'hash queue full' })
  t.equal(await first, alice)
})

t.test('R2: the demo users verify with their documented passwords', async (t) => {
  t.strictSame(DEMO_USERS.map(({ id, username }) => ({ id, username })), [
    { id: 1, username: 'john' },
    { id: 2, username: 'chris' },
    { id: 3, username: 'maria' }
  ])
  for (const user of DEMO_USERS) {
    t.strictSame(parseHash(user.passwordHash)?.params, { ln: 14, r: 8, p: 5 }, `${user.username}: default scrypt params`)
  }
  const store = new UserStore(DEMO_USERS, new BoundedQueue(3, 10, () => new Error('full')))
  const [john, chris, maria, wrong] = await Promise.all([
    store.verifyCredentials('john', 'changeme'),
    store.verifyCredentials('chris', 'secret'),
    store.verifyCredentials('maria', 'guess'),
    store.verifyCredentials('john', 'secret')
  ])
  t.equal(john?.id, 1)
  t.equal(chris?.id, 2)
  t.equal(maria?.id, 3)
  t.equal(wrong, undefined, 'john with chris\'s password fails')
})

t.test('R2: loadUsersFile accepts a valid file', async (t) => {
  const users = [alice, bob, { id: 'uuid-42', username: 'carol', passwordHash: aliceHash }]
  const path = tempFile(t, JSON.stringify(users, null, 2))
  const loaded = loadUsersFile(path)
  t.strictSame(loaded, users)
  const store = new UserStore(loaded, newQueue())
  t.equal((await store.verifyCredentials('alice', 'alice-password'))?.id, 1)
  t.equal(store.findById('uuid-42')?.username, 'carol')
})

t.test('R2: loadUsersFile accepts an empty array', async (t) => {
  t.strictSame(loadUsersFile(tempFile(t, '[]')), [])
})

t.test('R2: loadUsersFile rejects a missing file, naming it', async (t) => {
  const path = join(tempDir(t), 'does-not-exist.json')
  const message = loadError(path)
  t.ok(message.startsWith(`USERS_FILE ${path}`), message)
  t.match(message, /ENOENT/)
})

t.test('R2: loadUsersFile rejects a directory', async (t) => {
  const dir = tempDir(t)
  t.ok(loadError(dir).startsWith(`USERS_FILE ${dir}`))
})

t.test('R2: loadUsersFile rejects invalid JSON, naming the file', async (t) => {
  for (const content of ['', '{', '[{"id": 1,}]', 'users: []']) {
    const path = tempFile(t, content)
    const message = loadError(path)
    t.ok(message.startsWith(`USERS_FILE ${path}: SyntaxError`), message)
  }
})

t.test('R2: loadUsersFile rejects a file that is not an array', async (t) => {
  for (const content of ['{}', JSON.stringify({ users: [alice] }), '"alice"', 'null', '42']) {
    const path = tempFile(t, content)
    const message = loadError(path)
    t.ok(message.startsWith(`USERS_FILE ${path}: / `), message)
    t.match(message, /expected an array of \{ id, username, passwordHash \}$/)
  }
})

t.test('R2: loadUsersFile rejects an entry missing passwordHash, naming where', async (t) => {
  const path = tempFile(t, JSON.stringify([alice, { id: 2, username: 'nohash' }]))
  const message = loadError(path)
  t.ok(message.startsWith(`USERS_FILE ${path}: /1`), message)
  t.match(message, /passwordHash/)
})

t.test('R2: loadUsersFile rejects other bad entries', async (t) => {
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
