import type { FastifyInstance } from 'fastify'
import { bearer } from './app.js'

/**
 * Races between a thief who refreshes a stolen session in a loop on one instance
 * and its owner who, at the same moment, presents an already rotated refresh token
 * (reuse) or logs out on another. Whatever the interleaving, the session must end:
 * afterwards the thief's latest refresh token and latest access token are refused.
 * Each trial starts its session directly (no password hash), since only refresh
 * and logout race.
 */

interface Tokens { access_token: string, refresh_token: string }

const refresh = async (app: FastifyInstance, token: string): Promise<Tokens | undefined> => {
  const res = await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: token } })
  return res.statusCode === 200 ? res.json() : undefined
}

async function newSession (app: FastifyInstance): Promise<Tokens> {
  const { accessToken, refreshToken } = await app.catsSessions.start({ id: 1, username: 'john' }, { address: '127.0.0.1', userAgent: 'race' })
  if (refreshToken === undefined) throw new Error('refresh tokens are off')
  return { access_token: accessToken, refresh_token: refreshToken }
}

/** The thief refreshes up to `rounds` times from `from`; answers the last tokens it got. */
async function thiefLoop (app: FastifyInstance, from: Tokens, rounds: number): Promise<Tokens> {
  let latest = from
  for (let round = 0; round < rounds; round++) {
    const next = await refresh(app, latest.refresh_token)
    if (next === undefined) break
    latest = next
  }
  return latest
}

/** Whether the thief's chain survived: its latest refresh token still refreshes, or its latest access token still works. */
async function survived (app: FastifyInstance, thief: Tokens): Promise<boolean> {
  const profile = await app.inject({ url: '/profile', headers: bearer(thief.access_token) })
  return profile.statusCode !== 401 || (await refresh(app, thief.refresh_token)) !== undefined
}

/**
 * What the owner does at the moment the thief refreshes: presents the rotated refresh token (`reuse`), logs the
 * session out, ends it from another session of theirs (`delete`), or logs out every other session (`others`).
 */
export type Owner = 'reuse' | 'logout' | 'delete' | 'others'

const sidOf = (accessToken: string): string => JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).sid

async function ownerActs (app: FastifyInstance, owner: Owner, stolen: Tokens, device: Tokens | undefined): Promise<unknown> {
  switch (owner) {
    case 'reuse': return await refresh(app, stolen.refresh_token)
    case 'logout': return await app.inject({ method: 'POST', url: '/auth/logout', headers: bearer(stolen.access_token) })
    case 'delete': return await app.inject({ method: 'DELETE', url: `/auth/sessions/${sidOf(stolen.access_token)}`, headers: bearer(device?.access_token ?? '') })
    case 'others': return await app.inject({ method: 'POST', url: '/auth/logout?scope=others', headers: bearer(device?.access_token ?? '') })
  }
}

/** Runs `trials` races; answers how many of them the thief's chain survived. */
export async function raceTrials (thiefApp: FastifyInstance, ownerApp: FastifyInstance, owner: Owner, trials: number): Promise<number> {
  let survivors = 0
  for (let trial = 0; trial < trials; trial++) {
    const stolen = await newSession(ownerApp)
    // The owner's other session, which ends the stolen one (delete, others) and logs out when the trial is over.
    const device = owner === 'delete' || owner === 'others' ? await newSession(ownerApp) : undefined
    // The thief refreshes first, so the owner's copy is already rotated.
    const first = await refresh(thiefApp, stolen.refresh_token)
    if (first === undefined) throw new Error('the first refresh failed')
    const [thief] = await Promise.all([thiefLoop(thiefApp, first, 6), ownerActs(ownerApp, owner, stolen, device)])
    if (await survived(thiefApp, thief) || await survived(ownerApp, thief)) survivors++
    if (device !== undefined) await ownerApp.inject({ method: 'POST', url: '/auth/logout', headers: bearer(device.access_token) })
  }
  return survivors
}

/**
 * Tabs presenting one refresh token at once, alternately on two instances, within the reuse window: in every trial
 * each tab must be answered 200 with the same new refresh token (never a generation more) and an access token of its
 * own that works on the other instance, and the session must go on. Answers what went otherwise, per trial (empty
 * when every trial went right).
 */
export async function concurrentRefreshTrials (a: FastifyInstance, b: FastifyInstance, trials: number): Promise<string[]> {
  const wrong: string[] = []
  for (let trial = 0; trial < trials; trial++) {
    const first = await newSession(a)
    const tabs = [a, b, a, b]
    const answers = await Promise.all(tabs.map((app) => app.inject({ method: 'POST', url: '/auth/refresh', payload: { refresh_token: first.refresh_token } })))
    const statuses = answers.map((res) => res.statusCode)
    if (statuses.some((status) => status !== 200)) {
      wrong.push(`trial ${trial}: statuses ${statuses.join()}`)
      continue
    }
    const tokens: Tokens[] = answers.map((res) => res.json())
    const refreshTokens = new Set(tokens.map((token) => token.refresh_token)).size
    if (refreshTokens !== 1) wrong.push(`trial ${trial}: ${refreshTokens} new refresh tokens, not one`)
    const accessTokens = new Set(tokens.map((token) => token.access_token)).size
    if (accessTokens !== tabs.length) wrong.push(`trial ${trial}: ${accessTokens} access tokens for ${tabs.length} tabs`)
    for (const [index, token] of tokens.entries()) {
      const other = tabs[index] === a ? b : a
      const profile = await other.inject({ url: '/profile', headers: bearer(token.access_token) })
      if (profile.statusCode !== 200) wrong.push(`trial ${trial}: tab ${index}'s access token got ${profile.statusCode}`)
    }
    if (await refresh(b, tokens[0].refresh_token) === undefined) wrong.push(`trial ${trial}: the session did not go on`)
  }
  return wrong
}
