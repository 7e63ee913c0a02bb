// British and American spellings of one word, for full-text search. Both stores stem with Porter (FTS5's porter,
// PostgreSQL's English snowball), which folds "apologizing" and "apologize" together but leaves "apologise" apart,
// and "colour" apart from "color": a query word is searched in its own spelling and the other one, so neither the
// index nor an existing database changes.

/** -ise/-ize and -yse/-yze with their endings (-ising, -isation, -iser, …), after a stem long enough not to catch "size" or "rise". */
const ISE = /^(\p{L}{3,})([iy])([sz])(e|es|ed|ing|er|ers|ation|ations|able)$/u;

/**
 * -our/-or with their endings, after a stem holding a vowel and ending in a letter that precedes -our in such words
 * (colour, behaviour, vapour, rancour): "four", "hour", "your", "flour", "tour" and "door" are left alone.
 */
const OUR = /^(\p{L}*[aeiouy]\p{L}*[bcdglmnpv]|\p{L}*[aeiouy]\p{L}*i)(our|or)(s|ed|ing|ite|ites|able|ably|al|ally|ful|fully|less|er|ers|hood|hoods|ist|ists|y)?$/u;

/** The other region's spelling of one run of letters (lower case), or null when it has none. */
function otherSpelling(run: string): string | null {
  const word = run.toLowerCase();
  const ise = ISE.exec(word);
  // "colourise": -our is looked for in the stem before -ise, so the other spelling is "colorize".
  const stem = ise ? ise[1] : word;
  const our = OUR.exec(stem);
  if (!ise && !our) return null;
  const otherStem = our ? `${our[1]}${our[2] === 'our' ? 'or' : 'our'}${our[3] ?? ''}` : stem;
  return ise ? `${otherStem}${ise[2]}${ise[3] === 's' ? 'z' : 's'}${ise[4]}` : otherStem;
}

/** The term and, when any of its runs of letters has one, its other regional spelling ("apologise," → "apologize,"). */
export function spellings(term: string): string[] {
  let changed = false;
  const other = term.replace(/\p{L}+/gu, (run) => {
    const spelled = otherSpelling(run);
    if (spelled === null) return run;
    changed = true;
    return spelled;
  });
  return changed ? [term, other] : [term];
}
