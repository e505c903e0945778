type NameInput = Record<string, unknown>;
type NameOutput = string;
declare function name(args: NameInput): NameOutput;
