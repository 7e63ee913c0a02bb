import type { CodegenConfig } from '@graphql-codegen/cli';

// A project of your own, typed from the schema a Souls server serves (introspection, with the token on a server with
// --tokens-file): `npx graphql-codegen` writes typed documents for src/*.graphql into src/gql/.
const url = process.env.SOULS_URL ?? 'http://127.0.0.1:4000/graphql';
const token = process.env.SOULS_TOKEN;

const config: CodegenConfig = {
  schema: { [url]: { headers: token ? { authorization: `Bearer ${token}` } : {} } },
  documents: ['src/**/*.graphql'],
  importExtension: '.ts',
  generates: {
    'src/gql/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { useTypeImports: true, enumsAsTypes: true, scalars: { DateTime: 'string' } },
    },
  },
};

export default config;
