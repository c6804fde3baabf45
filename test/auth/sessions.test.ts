import t from 'tap'
import { randomUUID } from 'node:crypto'
import { MemoryDenylist } from '../../src/auth/sessions/denylist.js'
import { refreshTokenKey } from '../../src/auth/sessions/refresh-token.js'
import { MemorySessionStore } from '../../src/auth/sessions/memory-session-store.js'
import { Sessions } from '../../src/auth/sessions/sessions.js'
import type { TokenClaims, UserId, VerifiedClaims } from '../../src/auth/schemas.js'

/** A denylist whose next write fails, as Redis does when it is away while the database is not. */
class FlakyDenylist extends MemoryDenylist {
  failNext = false
  override async revoke (id: string, untilMs: number): Promise<void> {
    if (this.failNext) {
      this.failNext = false
      throw new Error('the denylist store is away')
    }
    await super.revoke(id, untilMs)
  }
}

t.test('a reuse whose denial failed denies the session\'s access tokens when the session is presented again', async (t) => {
  const store = new MemorySessionStore()
  const denylist = new FlakyDenylist()
  t.teardown(async () => {
    await store.close()
    await denylist.close()
  })
  const signed: TokenClaims[] = []
  const sessions = new Sessions({
    sign: (claims) => { signed.push(claims); return randomUUID() },
    accessLifetimeSeconds: 3600,
    refreshEnabled: true,
    refreshLifetimeSeconds: 86_400,
    refreshKey: refreshTokenKey('a-secret-that-is-at-least-32-characters-long'),
    refreshLimit: { max: 100, windowMs: 60_000, reuseWindowMs: 0 },
    maxPerUser: 10,
    store,
    denylist,
    users: { findById: () => ({ id: 1, username: 'john', passwordHash: '' }) }
  })
  const { refreshToken: stolen } = await sessions.start({ id: 1, username: 'john' }, { address: '127.0.0.1', userAgent: 'test' })
  const thief = await sessions.refresh(stolen ?? '')
  t.ok(thief !== undefined, 'the thief refreshed first')
  const { sid, jti } = signed[signed.length - 1]
  const claims = { sub: 1, username: 'john', sid, jti, iat: 0, exp: 0 }
  denylist.failNext = true
  await t.rejects(sessions.refresh(stolen ?? ''), /away/, 'the owner\'s reuse ends the session, but its denial fails')
  t.equal(sessions.isRevoked(claims), false, 'the thief\'s access token is not denied yet')
  t.equal(await sessions.refresh(stolen ?? ''), undefined, 'the owner tries again')
  t.equal(sessions.isRevoked(claims), true, 'now it is')
  t.equal(await sessions.refresh(thief?.refreshToken ?? ''), undefined, 'and the thief\'s refresh token is refused')
})

/** A memory store whose endings fail on demand, as a database does when it drops the connection. */
class FlakyStore extends MemorySessionStore {
  failEnds = false
  /** An ending by another request, between the list and this one's ending. */
  endedMeanwhile = false
  override async endSession (id: string): Promise<void> {
    if (this.failEnds) throw new Error('the session store is away')
    await super.endSession(id)
  }

  override async endSessions (userId: UserId, ids: readonly string[], nowMs: number): Promise<string[]> {
    if (this.failEnds) throw new Error('the session store is away')
    const ended = await super.endSessions(userId, ids, nowMs)
    return this.endedMeanwhile ? [] : ended
  }
}

t.test('every path that ends sessions heals on retry when a denial or an ending fails', async (t) => {
  const store = new FlakyStore()
  const denylist = new FlakyDenylist()
  t.teardown(async () => {
    await store.close()
    await denylist.close()
  })
  let userGone = false
  const ended: string[] = []
  const sessions = new Sessions({
    sign: (claims) => JSON.stringify(claims),
    accessLifetimeSeconds: 3600,
    refreshEnabled: true,
    refreshLifetimeSeconds: 86_400,
    refreshKey: refreshTokenKey('a-secret-that-is-at-least-32-characters-long'),
    refreshLimit: { max: 100, windowMs: 60_000, reuseWindowMs: 0 },
    maxPerUser: 2,
    store,
    denylist,
    users: { findById: () => userGone ? undefined : { id: 1, username: 'john', passwordHash: '' } },
    events: { started: () => {}, ended: (reason, count) => { ended.push(`${reason} ${count}`) } }
  })
  const client = { address: '127.0.0.1', userAgent: 'test' }
  const device = async (): Promise<{ claims: VerifiedClaims, refreshToken: string }> => {
    const { accessToken, refreshToken } = await sessions.start({ id: 1, username: 'john' }, client)
    return { claims: { ...JSON.parse(accessToken), iat: 0, exp: 0 }, refreshToken: refreshToken ?? '' }
  }
  const denied = (claims: VerifiedClaims): boolean | Promise<boolean> => sessions.isRevoked(claims)

  // others: the denial fails, so nothing ends; the retry denies and ends.
  let [other, mine] = [await device(), await device()]
  denylist.failNext = true
  await t.rejects(sessions.endSessions(mine.claims, 'others'), /away/)
  t.equal(await denied(other.claims), false)
  await sessions.endSessions(mine.claims, 'others')
  t.equal(await denied(other.claims), true, 'others: denied by the retry')
  t.strictSame((await sessions.list(mine.claims)).map((view) => view.id), [mine.claims.sid])

  // DELETE: the same.
  other = await device()
  denylist.failNext = true
  await t.rejects(sessions.endSession(mine.claims, other.claims.sid), /away/)
  t.equal(await sessions.endSession(mine.claims, other.claims.sid), true, 'the retry ends it')
  t.equal(await denied(other.claims), true)
  t.equal(await sessions.endSession(mine.claims, other.claims.sid), false, 'then it is not a live session')

  // DELETE of a session another request ends meanwhile: still ended and denied, counted once (by the other).
  other = await device()
  store.endedMeanwhile = true
  t.equal(await sessions.endSession(mine.claims, other.claims.sid), true)
  store.endedMeanwhile = false
  t.equal(await denied(other.claims), true)

  // The cap: the login whose denial of the oldest fails starts nothing; its retry denies and ends it.
  other = await device()
  denylist.failNext = true
  await t.rejects(device(), /away/)
  t.strictSame((await sessions.list(mine.claims)).map((view) => view.id), [mine.claims.sid, other.claims.sid], 'nothing started, nothing ended')
  const third = await device()
  t.equal(await denied(mine.claims), true, 'cap: the oldest is denied by the retry')
  t.strictSame((await sessions.list(third.claims)).map((view) => view.id), [other.claims.sid, third.claims.sid])

  // An ending that fails after its denial: the token is refused, and the session's next refresh ends it.
  store.failEnds = true
  await t.rejects(sessions.endSessions(third.claims, 'others'), /away/)
  store.failEnds = false
  t.equal(await denied(other.claims), true)
  t.equal(await sessions.refresh(other.refreshToken), undefined, 'its next refresh is refused')
  t.strictSame((await sessions.list(third.claims)).map((view) => view.id), [third.claims.sid], 'and ended it')

  // global: the others' denial fails; the retry ends them and the caller's.
  other = await device()
  denylist.failNext = true
  await t.rejects(sessions.endSessions(third.claims, 'global'), /away/)
  t.equal(await denied(third.claims), false, 'the caller is not logged out yet')
  await sessions.endSessions(third.claims, 'global')
  t.equal(await denied(other.claims), true)
  t.equal(await denied(third.claims), true)

  // local: the same, and an ending that fails leaves the token refused.
  mine = await device()
  denylist.failNext = true
  await t.rejects(sessions.endSessions(mine.claims), /away/)
  t.equal(await denied(mine.claims), false)
  store.failEnds = true
  await t.rejects(sessions.endSessions(mine.claims), /away/)
  store.failEnds = false
  t.equal(await denied(mine.claims), true, 'denied before its ending failed')
  t.equal(await sessions.refresh(mine.refreshToken), undefined)

  // A user gone: the ending at refresh is denied first; a retry of the refresh finishes it.
  mine = await device()
  userGone = true
  denylist.failNext = true
  await t.rejects(sessions.refresh(mine.refreshToken), /away/)
  t.equal(await sessions.refresh(mine.refreshToken), undefined, 'the retry (a reuse, now) ends it')
  t.equal(await denied(mine.claims), true)
  t.strictSame(ended, ['logout_others 1', 'owner 1', 'cap 1', 'logout_others 1', 'logout 1', 'reuse 1'], 'what failed is not counted')
})
