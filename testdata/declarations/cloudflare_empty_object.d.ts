type EmptyInput = Record<string, unknown>;
declare function empty(args: EmptyInput): unknown;
