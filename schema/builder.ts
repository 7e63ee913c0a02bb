import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import type { Context } from '../src/context.ts';

export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: number; Output: number };
    ID: { Input: string; Output: string | number };
  };
}>({
  plugins: [ErrorsPlugin],
  defaultFieldNullability: false,
  errors: { defaultTypes: [] },
});
