type CycleInput = Record<string, unknown>;
declare function cycle(args: CycleInput): unknown;

type AwayInput = {
  x?: unknown;
  y?: unknown;
  z?: unknown;
};
declare function away(args: AwayInput): unknown;
