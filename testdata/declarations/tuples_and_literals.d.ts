type PlotInput = {
  point?: [number, number];
  legacy_pair?: [string, number];
  level?: 1 | 2 | 3;
  mixed?: "a" | 1 | true | null;
  kind?: "scatter";
  nothing?: never;
  anything?: unknown;
};
declare function plot(args: PlotInput): unknown;
