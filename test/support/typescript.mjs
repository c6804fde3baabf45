// `node --import=tsx --import=./test/support/typescript.mjs`: @fastify/autoload loads the .ts plugins and routes
// only when it is told that TypeScript can be imported, and it does not recognise tsx loaded with --import.
process.env.FASTIFY_AUTOLOAD_TYPESCRIPT = '1'
