import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

/**
 * Module hooks that run the TypeScript of the tests and the sources: each .ts file is transpiled alone by
 * esbuild (types stripped, no type check: `npm run typecheck` does that), with its lines kept where they are
 * and an inline source map, so stack traces and the coverage report point at the .ts source.
 */

const TYPESCRIPT = /\.(?:ts|mts|cts)$/

/** A JavaScript specifier (`./module.js`, maybe with a query such as t.mockImport's) and its TypeScript file. */
const JAVASCRIPT = /\.([mc]?)js(\?[^#]*)?(#.*)?$/

/** `./module.js` names `./module.ts` when there is no such JavaScript file, as in NodeNext resolution. */
export async function resolve (specifier, context, nextResolve) {
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
  const { code } = await transform(await readFile(path, 'utf8'), {
    loader: 'ts',
    format: path.endsWith('.cts') ? 'cjs' : 'esm',
    target: `node${process.versions.node}`,
    sourcefile: path,
    sourcemap: 'inline',
    sourcesContent: true,
    keepNames: true
  })
  return { format: path.endsWith('.cts') ? 'commonjs' : 'module', source: code, shortCircuit: true }
}
