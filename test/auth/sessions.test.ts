import t from 'tap'
import { randomUUID } from 'node:crypto'
import { MemoryDenylist } from '../../src/auth/denylist.js'
import { refreshTokenKey } from '../../src/auth/refresh-token.js'
import { MemorySessionStore } from '../../src/auth/session-store.js'
import { Sessions } from '../../src/auth/sessions.js'
import type { TokenClaims } from '../../src/auth/schemas.js'

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
