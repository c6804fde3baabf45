import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { keepNextTickShapes } from '../src/next-tick-shapes.js'
import { baseEnv } from './support/server.js'

const moduleUrl = pathToFileURL(join(import.meta.dirname, '..', 'src', 'next-tick-shapes.ts')).href

// Runs in a child with V8's natives syntax and without coverage (which changes V8's feedback):
// nextTick is used often enough for V8 to give it feedback, the process goes idle (no entry
// queued), full collections run, nextTick is used again, and V8 prints nextTick's feedback.
// Node 24's V8 keeps a map that only feedback holds through --retain-maps-for-n-gc (2) full
// collections and frees it in the next; Node 20's and 22's free it in the first. An idle server
// goes through many, so the child runs FULL_COLLECTIONS, each in a turn of its own as when idle.
const FULL_COLLECTIONS = 6
const script = `
const { keepNextTickShapes } = await import(${JSON.stringify(moduleUrl)})
if (process.env.KEEP === '1') keepNextTickShapes()
for (let i = 0; i < 2000; i++) process.nextTick(() => {})
await new Promise((resolve) => setTimeout(resolve, 20))
for (let i = 0; i < ${FULL_COLLECTIONS}; i++) {
  gc()
  await new Promise((resolve) => setTimeout(resolve, 5))
}
process.nextTick(() => {})
await new Promise((resolve) => setTimeout(resolve, 20));
%DebugPrint(process.nextTick)
`

/** The states of the inline caches with which nextTick defines the properties of its queue entries. */
async function literalCacheStates (keep: boolean): Promise<string[]> {
  // V8 prints from C++ into stdout: a file takes it whole, where a non-blocking pipe may drop a part.
  const dir = mkdtempSync(join(tmpdir(), 'next-tick-'))
  const outFile = join(dir, 'out.txt')
  const out = openSync(outFile, 'w')
  try {
    const child = spawn(process.execPath,
      ['--import', 'tsx', '--allow-natives-syntax', '--expose-gc', '--input-type=module', '--eval', script],
      { env: { ...baseEnv, KEEP: keep ? '1' : '0' }, stdio: ['ignore', out, 'pipe'] })
    let errors = ''
    child.stderr?.on('data', (chunk) => { errors += String(chunk) })
    const [code] = await once(child, 'close')
    if (code !== 0) throw new Error(`child exited with ${String(code)}: ${errors}`)
    return [...readFileSync(outFile, 'utf8').matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1])
  } finally {
    closeSync(out)
    rmSync(dir, { recursive: true, force: true })
  }
}

t.test('without a kept entry, idle full collections turn nextTick\'s literal caches megamorphic', async (t) => {
  const states = await literalCacheStates(false)
  t.ok(states.length >= 4, `the properties of an entry (four; five from Node 22 on): ${states.join(', ')}`)
  t.ok(states.includes('MEGAMORPHIC'), `some cache went megamorphic: ${states.join(', ')}`)
})

t.test('with keepNextTickShapes(), the caches stay monomorphic across the same collections', async (t) => {
  const states = await literalCacheStates(true)
  t.ok(states.length >= 4, `the properties of an entry (four; five from Node 22 on): ${states.join(', ')}`)
  t.strictSame([...new Set(states)], ['MONOMORPHIC'])
})

t.test('keepNextTickShapes() returns the nextTick queue entry it keeps', async (t) => {
  const entry = keepNextTickShapes()
  t.type(entry, 'object')
  t.type(Reflect.get(entry ?? {}, 'callback'), 'function', 'an entry holds the callback of its tick')
})
