/**
 * Bundles the standalone server for `npm start` into dist/server/: src/server.ts
 * and every plugin and route file, with their dependencies. Unbundled, the server
 * loads about 900 module files one by one, which was most of its start-up time.
 *
 * The output keeps the repository's folders (dist/server/src/server.js,
 * dist/server/plugins/*.js, dist/server/routes/**), so autoload finds one file per
 * plugin and route as it does in dist/; the code they share goes into chunks beside
 * server.js. The library (dist/src/app.js and the rest of tsc's output) is not bundled.
 */
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, posix, relative, sep } from 'node:path'
import { build, type Plugin } from 'esbuild'

const root = join(import.meta.dirname, '..')
const outdir = join(root, 'dist', 'server')
const { peerDependencies }: { peerDependencies: Record<string, string> } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** The TypeScript files under a folder of the repository, relative to its root. */
function sources (folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
}

/**
 * A bundled CommonJS module that reads files beside itself (swagger-ui serves its page and assets
 * from its folder) gets its folder in node_modules as `__dirname` (and its path as `__filename`),
 * found when the server starts, instead of none: an ES module has neither. The build stops when
 * the package the server would find from dist/server is not the one bundled.
 */
const ownLocation: Plugin = {
  name: 'own-location',
  setup (esbuild) {
    const resolveFromOutput = createRequire(join(outdir, 'src', 'server.js')).resolve
    esbuild.onLoad({ filter: /[\\/]node_modules[\\/].+\.c?js$/ }, ({ path }) => {
      const source = readFileSync(path, 'utf8')
      if (!/\b__(dirname|filename)\b/.test(source)) return undefined
      const start = path.lastIndexOf(`node_modules${sep}`) + `node_modules${sep}`.length
      const parts = path.slice(start).split(sep)
      const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]
      const packageJson = join(path.slice(0, start), ...name.split('/'), 'package.json')
      if (resolveFromOutput(`${name}/package.json`) !== packageJson) throw new Error(`${name}: the server would not find the copy bundled (${packageJson})`)
      const file = relative(dirname(packageJson), path).split(sep).join(posix.sep)
      const location = `var __filename = require('node:path').join(require('node:path').dirname(require.resolve(${JSON.stringify(`${name}/package.json`)})), ${JSON.stringify(file)}); ` +
        "var __dirname = require('node:path').dirname(__filename);\n"
      return { contents: location + source, loader: 'js' }
    })
  }
}

rmSync(outdir, { recursive: true, force: true })
const { metafile } = await build({
  absWorkingDir: root,
  entryPoints: ['src/server.ts', ...sources('plugins'), ...sources('routes')],
  outdir,
  outbase: '.',
  // Beside server.js, so code that finds files from its own folder (see below) finds the same ones in any chunk.
  chunkNames: 'src/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  metafile: true,
  // Loaded from node_modules as they are: the optional peers (pg, PGlite, ioredis, prom-client, the OpenTelemetry
  // SDK), which a deployment installs for the settings it uses, and postgrator are imported only when configured;
  // PGlite also loads its WebAssembly and data files from its own folder.
  external: [...Object.keys(peerDependencies), 'postgrator'],
  plugins: [ownLocation],
  // The bundled CommonJS dependencies call require(), which an ES module does not have.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning'
})

/** The output file that holds a source module's code. */
function outputOf (source: string): string {
  const found = Object.entries(metafile.outputs).find(([, output]) => source in output.inputs)
  if (found === undefined) throw new Error(`${source} is not in the bundle`)
  return join(root, found[0])
}

// These modules find files from their own folder, as they do in dist/src/: the app autoloads ../plugins
// and ../routes, the migrations runner reads migrations/ beside itself. So their code must sit in src/.
for (const source of ['src/app.ts', 'src/db/migrations.ts']) {
  const folder = dirname(outputOf(source))
  if (folder !== join(outdir, 'src')) throw new Error(`${source} was bundled into ${relative(root, folder)}, not dist/server/src`)
}
cpSync(join(root, 'src', 'db', 'migrations'), join(outdir, 'src', 'migrations'), { recursive: true })
