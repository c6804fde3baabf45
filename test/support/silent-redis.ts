import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import fp from 'fastify-plugin'
import serviceApp from '../../src/app.js'
import { logCapture, testConfig } from './app.js'
import { TcpProxy } from './tcp-proxy.js'

/** A correct login of a demo user. */
export const login: InjectOptions = {
  method: 'POST', url: '/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"username":"john","password":"changeme"}'
}

/** What happened around a silence: the logins' answers during it, and the first successful one after it. */
export interface Recovery {
  during: number[]
  /** When the first login that succeeded after the silence was sent, and when it was answered, in ms after the silence ended. */
  sent: number
  answered: number
  /** Logins refused after the silence before that one. */
  refused: number
  /** The log lines of the outage, parsed. */
  logged: Array<{ msg: string, outageMs?: number }>
  app: FastifyInstance
}

/**
 * Makes Redis silent for `silenceMs` behind a proxy that loses what is sent meanwhile (the connection stays open),
 * sending a login every `everyMs` during it, then a login every 100 ms after it until one succeeds (or `giveUpMs`).
 * The silence lasts until at least two logins were answered in it, however slowly a loaded machine answers them:
 * the second is the one that meets the first one's late reply.
 */
export async function silentRedis (t: Test, redisUrl: string, silenceMs: number, everyMs: number, giveUpMs: number): Promise<Recovery> {
  const target = new URL(redisUrl)
  const proxy = new TcpProxy(target)
  await proxy.start()
  t.teardown(() => proxy.stop())
  const { stream, text } = logCapture()
  const app = Fastify({ logger: { level: 'info', stream }, pluginTimeout: 120_000 })
  t.teardown(() => app.close())
  await app.register(fp(serviceApp), { config: { ...testConfig, REDIS_URL: proxy.url(target), REDIS_KEY_PREFIX: `cats-test-${randomBytes(6).toString('hex')}:` } })
  await app.ready()
  t.equal((await app.inject(login)).statusCode, 200, 'a login before the silence')

  proxy.silent = true
  const silenced = Date.now()
  const during: number[] = []
  while (Date.now() - silenced < silenceMs || during.length < 2) {
    const started = Date.now()
    during.push((await app.inject(login)).statusCode)
    await sleep(Math.max(0, Math.min(everyMs - (Date.now() - started), silenceMs - (Date.now() - silenced))))
  }
  proxy.silent = false
  const resumed = Date.now()
  let refused = 0
  let sent = Infinity
  let answered = Infinity
  for (;;) {
    const started = Date.now()
    const res = await app.inject(login)
    if (res.statusCode === 200) {
      [sent, answered] = [started - resumed, Date.now() - resumed]
      break
    }
    refused++
    if (started - resumed > giveUpMs) break
    await sleep(100)
  }
  const logged = text().split('\n').filter((line) => line.includes('"dependency":"redis"')).map((line) => JSON.parse(line) as { msg: string, outageMs?: number })
  return { during, sent, answered, refused, logged, app }
}
