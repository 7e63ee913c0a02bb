import type { CodegenConfig } from '@graphql-codegen/cli';

// Typed documents for the example clients, from the committed SDL; `npm test` fails when they are stale.
// The output must type-check under this project's tsconfig: string unions instead of enums (erasableSyntaxOnly),
// `import type` for types (verbatimModuleSyntax) and `.ts` on relative imports (NodeNext, allowImportingTsExtensions).
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['examples/**/*.graphql'],
  importExtension: '.ts',
  generates: {
    'examples/gql/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { useTypeImports: true, enumsAsTypes: true, scalars: { DateTime: 'string', ID: 'string' } },
    },
  },
};

export default config;
