// npm run schema: writes schema/schema.graphql from the code (a test fails when the two differ).
import { writeFileSync } from 'node:fs';
import { printSoulsSchema } from './index.ts';

writeFileSync(new URL('./schema.graphql', import.meta.url), printSoulsSchema());
