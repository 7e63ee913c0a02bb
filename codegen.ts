import type { CodegenConfig } from '@graphql-codegen/cli';

// Typed documents for the example clients and the web app, and Apollo's possibleTypes, from the committed SDL; `npm test` fails when they are stale.
// The output must type-check under the project's tsconfigs: string unions instead of enums (erasableSyntaxOnly),
// `import type` for types (verbatimModuleSyntax) and `.ts` on relative imports (NodeNext and Vite's bundler
// resolution both accept it with allowImportingTsExtensions).
const clientPreset = {
  preset: 'client',
  presetConfig: { fragmentMasking: false },
  config: { useTypeImports: true, enumsAsTypes: true, scalars: { DateTime: 'string', ID: 'string' } },
} as const;

const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  importExtension: '.ts',
  generates: {
    'examples/gql/': { ...clientPreset, documents: ['examples/**/*.graphql', '!examples/codegen-project/**'] },
    'web/src/gql/': { ...clientPreset, documents: ['web/src/**/*.graphql'] },
    // Apollo Client's InMemoryCache needs the members of every union and interface (`possibleTypes`) to match
    // `... on Error { message }` on a result union; docs/api.md shows it in use.
    'schema/possible-types.json': { plugins: ['fragment-matcher'], config: { deterministic: true } },
  },
};

export default config;
