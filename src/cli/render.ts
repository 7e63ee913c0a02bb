// souls render: a soul's rendered block, as an agent's prompt or a game's dialogue system would use it.
import { renderSoul } from '../engine/index.ts';
import { parseArguments } from './arguments.ts';
import type { Command } from './command.ts';
import { findSoul, withExistingDb } from './database.ts';
import { commandHelp } from './help.ts';

export const renderCommand: Command = {
  name: 'render',
  summary: "print a soul's rendered block (markdown; reads only)",
  help: commandHelp({
    usage: ['render <soul> [--full] [options]'],
    description:
      "Prints the soul's rendered block: # Name, *description*, essence and its active traits, the text an agent's\n" +
      'prompt or a dialogue system uses. <soul> is an id or a name (any case). Reads only: a missing database is an error.',
    options: [['--full', 'each trait with its provenance ("- **principle** — provenance")']],
    groups: ['database', 'settings'],
    examples: ['souls render Mira', 'souls render 3 --full --db ./data/souls.db', 'souls render Relay > relay-prompt.md'],
  }),
  async run(argv, io) {
    const { args, values, config } = parseArguments('render', argv, { positionals: ['soul'], options: { full: { type: 'boolean' } }, groups: ['database', 'settings'] }, io.env);
    const text = await withExistingDb(config!, 'render', async (db) => renderSoul(db, (await findSoul(db, args.soul!)).id, { includeProvenance: values.full === true }));
    io.stdout.write(text);
    return 0;
  },
};
