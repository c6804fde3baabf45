import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Module hooks that run the TypeScript of the tests and the sources: each .ts file is transpiled alone by
 * esbuild (types stripped, no type check: `npm run typecheck` does that), with its lines kept where they are
 * and an inline source map, so stack traces and the coverage report point at the .ts source.
 *
 * Every test file is its own process and loads most of the sources again, so each output is kept on disk,
 * named by a hash of the file's path and text: a later process reads it instead of starting esbuild.
 */

const TYPESCRIPT = /\.(?:ts|mts|cts)$/

/** A JavaScript specifier (`./module.js`, maybe with a query such as t.mockImport's) and its TypeScript file. */
const JAVASCRIPT = /\.([mc]?)js(\?[^#]*)?(#.*)?$/

const root = fileURLToPath(new URL('../..', import.meta.url))
const esbuildVersion = JSON.parse(readFileSync(join(root, 'node_modules', 'esbuild', 'package.json'), 'utf8')).version
const cacheDir = join(root, 'node_modules', '.cache', 'typescript-hooks', `esbuild-${esbuildVersion}-node-${process.versions.node}`)
mkdirSync(cacheDir, { recursive: true })

/**
 * `./module.js` names `./module.ts` when there is no such JavaScript file, as in NodeNext resolution. A
 * TypeScript file's relative imports are tried as .ts first: they almost always are, and a failed resolution
 * costs an error and its stack.
 */
export async function resolve (specifier, context, nextResolve) {
  if (specifier.startsWith('.') && TYPESCRIPT.test(context.parentURL ?? '') && JAVASCRIPT.test(specifier)) {
    const url = new URL(specifier.replace(JAVASCRIPT, '.$1ts$2$3'), context.parentURL)
    if (existsSync(fileURLToPath(url))) return { url: url.href, format: url.pathname.endsWith('.cts') ? 'commonjs' : 'module', shortCircuit: true }
  }
  try {
    return await nextResolve(specifier, context)
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !JAVASCRIPT.test(specifier)) throw error
    return nextResolve(specifier.replace(JAVASCRIPT, '.$1ts$2$3'), context)
  }
}

export async function load (url, context, nextLoad) {
  const path = url.startsWith('file:') ? fileURLToPath(url) : ''
  if (!TYPESCRIPT.test(path)) return nextLoad(url, context)
  const format = path.endsWith('.cts') ? 'commonjs' : 'module'
  const source = await readFile(path, 'utf8')
  const cached = join(cacheDir, `${createHash('sha1').update(path).update('\0').update(source).digest('hex')}.js`)
  try {
    return { format, source: await readFile(cached, 'utf8'), shortCircuit: true }
  } catch {}
  const { transform } = await import('esbuild')
  const { code } = await transform(source, {
    loader: 'ts',
    format: format === 'commonjs' ? 'cjs' : 'esm',
    target: `node${process.versions.node}`,
    sourcefile: path,
    sourcemap: 'inline',
    sourcesContent: true,
    keepNames: true
  })
  // Written beside its name and renamed, so that a process reading it at the same time never sees half of it.
  const partial = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`
  writeFileSync(partial, code)
  renameSync(partial, cached)
  return { format, source: code, shortCircuit: true }
}
