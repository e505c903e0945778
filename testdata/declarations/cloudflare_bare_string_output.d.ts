type NameOutput = string;
declare function name(): NameOutput;
