// Names for ClientHello.engine. The wire field stays int32 (not a proto enum) so values we do not know,
// such as -1, survive decode -> encode; this constant only names the ones we do.

/**
 * The seed defines 1 as "the second-generation engine". The names Source1/Source2 and the value 0 for
 * the first generation follow the upstream game-coordinator schema (`ESourceEngine { k_ESE_Source1 = 0;
 * k_ESE_Source2 = 1; }`); the seed itself names only the value 1.
 */
export const Engine = { Source1: 0, Source2: 1 } as const;
export type Engine = (typeof Engine)[keyof typeof Engine];
