import { register } from 'node:module'

// `node --import=./test/support/typescript.mjs`: TypeScript for the test processes (see typescript-hooks.mjs).
register('./typescript-hooks.mjs', import.meta.url)
// @fastify/autoload loads the .ts plugins and routes only when it is told that TypeScript can be imported.
process.env.FASTIFY_AUTOLOAD_TYPESCRIPT = '1'
