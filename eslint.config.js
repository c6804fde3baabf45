import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', 'coverage/**', '.tap/**', 'bench/results/**', '.cache/**']
  }),
  {
    files: ['**/*.ts'],
    rules: {
      // A TypeBox schema and its Static type share one name; tsc already reports real redeclarations.
      '@typescript-eslint/no-redeclare': 'off'
    }
  }
]
